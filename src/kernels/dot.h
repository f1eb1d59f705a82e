// Dot products of one weight row with one activation row: the reductions behind every matmul.
//
// CANONICAL ORDERS (version "dot-v1"; every kernel variant must return these bits exactly)
//
// Float weights (F32, F16, BF16; activations f32), length n:
//   16 lanes. Lane l accumulates acc[l] = fma(w[k], x[k], acc[l]) for k = l, l+16, l+32, ...
//   in increasing k, starting from +0.0 (F16 and BF16 weights are widened to float exactly).
//   Then acc[l] += acc[l+8] for l < 8, acc[l] += acc[l+4] for l < 4, then +2, then +1;
//   the result is acc[0].
//
// Quantized weights (Q8_0, Q4_0; activations ActQ8 blocks of 32), n/32 blocks:
//   For block b, isum[b] = sum of w_q[i] * x_q[i] over its 32 elements, in int32 (exact, so
//   its order does not matter); p[b] = d_w[b] * d_x[b] in float (d_w widened from f16).
//   8 block lanes: acc[b % 8] = fma(p[b], float(isum[b]), acc[b % 8]) in increasing b, from
//   +0.0. Then acc[l] += acc[l+4] for l < 4, then +2, then +1; the result is acc[0].
//
// The order depends only on n and the data: never on the batch, thread count or ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant.h"

namespace tz {

constexpr int kDotLanes = 16;    // float dot products
constexpr int kBlockLanes = 8;   // quantized dot products (lanes over blocks)

float dot_f32_ref(const float* w, const float* x, size_t n);
float dot_f16_ref(const uint16_t* w, const float* x, size_t n);
float dot_bf16_ref(const uint16_t* w, const float* x, size_t n);
float dot_q8_0_ref(const BlockQ8_0* w, const ActQ8* x, size_t n);
float dot_q4_0_ref(const BlockQ4_0* w, const ActQ8* x, size_t n);

// Sum of x[k] (plain adds) in the 16-lane order above: lane l adds x[k] for k = l mod 16 in
// increasing k, then the same tree. Used for softmax denominators.
float sum_f32_ref(const float* x, size_t n);

}  // namespace tz
