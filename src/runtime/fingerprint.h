// The numerics fingerprint: a short hash and a readable manifest of everything that can change
// the bits of the logits. Same fingerprint, same bits (for the same request).
//
// Hashed: the engine version, the version of every canonical order, the mode, the KV cache
// storage type (f16 rounds keys and values), and the model file's XXH3-128 (which fixes the
// architecture, hyper-parameters, tensor types and values). Shown but not hashed, because the
// contract proves they cannot change the bits: the kernel variant (scalar, avx2, avx512, amx,
// neon...), the thread count, the prefill chunk size, the context size, the batch (what else runs
// beside a request), the KV block size and prefix-cache hits.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/weights.h"
#include "tzero/types.h"

namespace tzero {

// The versions of the canonical orders (kernels/dot.h, ops.h, math.h, moe.h, runtime/sampler.h).
constexpr const char* kCanonicalOrders =
    "dot-v1 ops-v1 attn-v2 exp-v1 silu-v1 gelu-v1 softcap-v1 moe-v1 sampler-v2 logprob-v1";

struct Fingerprint {
  std::string hash;         // 16 hex digits
  nlohmann::json manifest;  // the readable list
};

// custom_ops: the "op=name" overrides of registered kernels; they are hashed, since a custom
// kernel need not keep the canonical orders.
// n_ctx: the context per sequence; it is hashed only for a LongRoPE model, whose rope factors
// (long or short) it chooses.
Fingerprint compute_fingerprint(const Model& model, Mode mode, const std::string& kernel_set,
                                const std::vector<std::string>& custom_ops = {},
                                const std::string& kv_type = "f32", int n_ctx = 0);

}  // namespace tzero
