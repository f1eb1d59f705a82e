// The numerics fingerprint printed with every result. A placeholder until the proof tools
// define it fully: it names the engine version, the mode, the kernel set and the versions of
// the canonical orders (kernels/dot.h, kernels/ops.h, kernels/math.h).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/generate.h"

namespace tz::cli {

inline nlohmann::json fingerprint_json(const GenerateOptions& o, const GenerateResult& r) {
  return {{"engine", std::string("tzero ") + TZ_VERSION},
          {"mode", o.mode},
          {"kernels", r.kernels},
          {"canonical_orders", "dot-v1 ops-v1 attn-v1 exp-v1 silu-v1 sampler-v1"},
          {"status", "placeholder"}};
}

}  // namespace tz::cli
