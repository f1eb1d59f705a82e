// tzero's custom-op registry: plug your own kernel into the engine by name, and prove it keeps
// the reproducibility contract before you trust it.
//
// 1. Write a kernel with the signature of the op it replaces (below) and register it, e.g. at
//    static-initialization time:
//      static const bool registered = tzero::register_gemm("matmul.f32", "mine", &my_gemm);
// 2. Check it: tzero::check_op("matmul.f32", "mine") (tzero/check_op.h, in the tools library),
//    or `tzero check-op --op matmul.f32 --name mine` in a binary that links your kernel. The
//    verdict is one of
//      identical to the reference  - same bits as tzero's scalar reference on every case;
//      bit-stable but different    - always the same bits, but another order than the
//                                    reference (results are reproducible, just not tzero's);
//      unstable                    - the bits changed with the thread split, the batch, the
//                                    buffer alignment or between repeated calls (where: detail).
// 3. Use it: `tzero run --op matmul.f32=mine ...` (GenerateOptions::op_overrides). The numerics
//    fingerprint then names the custom kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tzero {

// Ops "matmul.f32", "matmul.f16", "matmul.bf16", "matmul.q8_0", "matmul.q4_0", "matmul.q4_k",
// "matmul.q6_k": y[t * ldy + r] = dot(weight row r, activation row t) for r < n_rows and
// t < n_tok. w holds n_rows rows of w_row_bytes; x holds n_tok rows of activations: float for
// f32/f16/bf16 weights, tzero's ActQ8 blocks (float d, int8 q[32]) for q8_0/q4_0 and ActQ8K
// blocks (float d, int8 q[256], int16 bsums[16]) for q4_k/q6_k (see src/kernels/quant*.h).
using GemmKernel = void (*)(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                            size_t n_rows, size_t n_tok, float* y, size_t ldy);
// Op "rmsnorm": out[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * w[i]; out may alias x.
using RmsNormKernel = void (*)(const float* x, const float* w, float eps, size_t n, float* out);
// Op "swiglu": out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
using SwigluKernel = void (*)(const float* gate, const float* up, size_t n, float* out);

// Register under (op, name). Returns true; false (and nothing registered) for an unknown op or a
// name already taken for that op.
bool register_gemm(const std::string& op, const std::string& name, GemmKernel fn);
bool register_rmsnorm(const std::string& name, RmsNormKernel fn);
bool register_swiglu(const std::string& name, SwigluKernel fn);

struct RegisteredOp {
  std::string op, name;
};
// Every registered kernel, including tzero's own variants ("builtin:avx2", ...).
std::vector<RegisteredOp> registered_ops();

}  // namespace tzero
