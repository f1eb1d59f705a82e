// tzero::check_op: is a custom kernel (registered through tzero/ops.h) safe to use? It runs the
// kernel against tzero's scalar reference and against itself under varied thread splits,
// shapes, batch mates, buffer alignments and repetitions, and gives a verdict.
//
// Part of the tools library (src/check_op/, linked by the tzero binary and by this tree's
// examples and tests; it compares with the trace layer's ulp distance), not of the engine
// library: `make install` installs the engine (tzero::tzero) and tzero/engine.h and
// tzero/ops.h, not this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tzero {

enum class OpVerdict { IdenticalToReference, StableButDifferent, Unstable };
const char* verdict_name(OpVerdict v);

struct OpCheckReport {
  std::string op, name;
  OpVerdict verdict = OpVerdict::IdenticalToReference;
  size_t cases = 0;  // shapes checked
  uint64_t max_ulp_vs_reference = 0;
  std::string detail;  // for Unstable: the first condition and shape that changed bits
};

// Checks the kernel registered as (op, name). Throws std::invalid_argument when it is not
// registered.
OpCheckReport check_op(const std::string& op, const std::string& name);

}  // namespace tzero
