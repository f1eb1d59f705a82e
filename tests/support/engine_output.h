// What a request through the batched engine (include/tzero/engine.h) returns, collected from its
// events, and the bit-for-bit comparison of two such results (engine tests).
#pragma once

#include <string>
#include <vector>

#include "tzero/engine.h"

namespace tzero::test {

struct EngineOutput {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<tzero::TokenLogprob>> top;
  std::string text, reason, digest;
  int n_cached = 0, n_preempted = 0, n_final = 0;
  int n_drafted = 0, n_accepted = 0;
};

// A callback that appends a request's events to o (o must outlive the request).
tzero::TokenCallback collect(EngineOutput& o);

// Bit-for-bit equality of everything a request returns (tokens, text, finish reason, digest,
// logprobs and top logprobs compared by memcmp); failures name `what`.
void expect_same(const EngineOutput& solo, const EngineOutput& got, const std::string& what);

}  // namespace tzero::test
