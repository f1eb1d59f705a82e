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
// The other 32-element block types (quant_legacy.h; activations ActQ8 blocks of 32), with w_int
// the block's integer weights (block_ints):
//   Q5_0, IQ4_NL, MXFP4: Q4_0's order exactly: isum[b] = sum of w_int[i] * x_q[i] in int32
//   (Q5_0 w_int = q - 16, IQ4_NL and MXFP4 their table values), p[b] = d_w[b] * d_x[b] in
//   float (MXFP4: d_w = 2^(e - 128), exact), 8 block lanes, the 8-lane tree.
//   Q4_1, Q5_1 (a min m): per block, exact int32 isum[b] = sum of q[i] * x_q[i] and
//   xsum[b] = sum of x_q[i]; p = d_w * d_x, pm = m_w * d_x (each one rounding).
//   8 block lanes: acc[b%8] = fma(p, float(isum[b]), acc[b%8]) and
//   accm[b%8] = fma(pm, float(xsum[b]), accm[b%8]); result = tree8(acc) + tree8(accm).
//
// Super-block weights (Q4_K, Q5_K, Q6_K, IQ4_XS, Q3_K, Q2_K; activations ActQ8K super-blocks
// of 256), n/256 blocks:
//   Q4_K: per block b, exact int32 A[b] = sum over sub-blocks j of sc[j] * (sum of q*x_q over
//   j) and B[b] = sum over j of m[j] * (sum of x_q over j); p = d_w * d_x, pm = dmin_w * d_x.
//   8 block lanes: acc[b%8] = fma(p, float(A[b]), acc[b%8]) and
//   accm[b%8] = fma(pm, float(B[b]), accm[b%8]); result = tree8(acc) - tree8(accm).
//   Q5_K: Q4_K's order exactly, its q in [0, 31].
//   Q6_K: per block, exact int32 A[b] = sum over sub-blocks i of scales[i] * (sum of
//   (q - 32) * x_q over i); p = d_w * d_x; acc[b%8] = fma(p, float(A[b]), acc[b%8]);
//   result = tree8(acc). float(int) rounds to nearest even where |A| >= 2^24.
//   IQ4_XS: Q6_K's order, A[b] = sum over its 8 sub-blocks j of 32 of (ls[j] - 32) * (sum of
//   kIQ4NLValues[q] * x_q over j). Q3_K: Q6_K's order, A[b] = sum over its 16 sub-blocks i of
//   (sc[i] - 32) * (sum of (q2 - (hbit ? 0 : 4)) * x_q over i).
//   Q2_K: Q4_K's order with 16 sub-blocks i of 16: A[b] = sum of (scales[i] & 15) * (sum of
//   q * x_q over i), B[b] = sum of (scales[i] >> 4) * bsums[i]; tree8(acc) - tree8(accm).
//
// The order depends only on n and the data: never on the batch, thread count or ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/quant_legacy.h"
#include "kernels/quant_k2.h"

namespace tzero {

constexpr int kDotLanes = 16;   // float dot products
constexpr int kBlockLanes = 8;  // quantized dot products (lanes over blocks)

float dot_f32_ref(const float* w, const float* x, size_t n);
float dot_f16_ref(const uint16_t* w, const float* x, size_t n);
float dot_bf16_ref(const uint16_t* w, const float* x, size_t n);
float dot_q8_0_ref(const BlockQ8_0* w, const ActQ8* x, size_t n);
float dot_q4_0_ref(const BlockQ4_0* w, const ActQ8* x, size_t n);
float dot_q4_1_ref(const BlockQ4_1* w, const ActQ8* x, size_t n);
float dot_q5_0_ref(const BlockQ5_0* w, const ActQ8* x, size_t n);
float dot_q5_1_ref(const BlockQ5_1* w, const ActQ8* x, size_t n);
float dot_iq4_nl_ref(const BlockIQ4_NL* w, const ActQ8* x, size_t n);
float dot_mxfp4_ref(const BlockMXFP4* w, const ActQ8* x, size_t n);
float dot_q4_k_ref(const BlockQ4_K* w, const ActQ8K* x, size_t n);
float dot_q5_k_ref(const BlockQ5_K* w, const ActQ8K* x, size_t n);
float dot_q6_k_ref(const BlockQ6_K* w, const ActQ8K* x, size_t n);
float dot_iq4_xs_ref(const BlockIQ4_XS* w, const ActQ8K* x, size_t n);
float dot_q3_k_ref(const BlockQ3_K* w, const ActQ8K* x, size_t n);
float dot_q2_k_ref(const BlockQ2_K* w, const ActQ8K* x, size_t n);

// The exact integer parts of one K-quant super-block product (shared by every variant's
// tests): Q4_K, Q5_K and Q2_K give A and B, Q6_K, IQ4_XS and Q3_K give A (B = 0).
void q4_k_block_ints(const BlockQ4_K& w, const ActQ8K& x, int32_t* a, int32_t* b);
void q5_k_block_ints(const BlockQ5_K& w, const ActQ8K& x, int32_t* a, int32_t* b);
int32_t q6_k_block_int(const BlockQ6_K& w, const ActQ8K& x);
int32_t iq4_xs_block_int(const BlockIQ4_XS& w, const ActQ8K& x);
int32_t q3_k_block_int(const BlockQ3_K& w, const ActQ8K& x);
void q2_k_block_ints(const BlockQ2_K& w, const ActQ8K& x, int32_t* a, int32_t* b);

// Sum of x[k] (plain adds) in the 16-lane order above: lane l adds x[k] for k = l mod 16 in
// increasing k, then the same tree. Used for softmax denominators.
float sum_f32_ref(const float* x, size_t n);

}  // namespace tzero
