// NEON kernels of the 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) and
// the activation quantizers (kernels/quant.h, quant_legacy.h, quant_k.h). The int8 block sums are
// exact in any order, so a policy I supplies them (I::dot: plain NEON widening multiplies, or
// SDOT); the float part is the reference's order, written as dot.cpp and dot_legacy.cpp write
// it: p = d_w * d_x, acc[b % 8] = fma(p, float(isum), acc[b % 8]), tree8. Internal linkage;
// included by kernels_neon.h only.
#pragma once

#include <arm_neon.h>

#include <cmath>

#include "base/fp16.h"
#include "kernels/dot.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/quant_legacy.h"

namespace tzero::arm {
namespace {

// The plain Advanced SIMD int8 dot: 16 products as int16 (|q| <= 128 each, so no overflow),
// added pairwise into the four int32 lanes.
struct Int8Neon {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
  }
};

// The exact int32 sum of 32 products w[i] * x[i] of a block's two 16-element halves.
template <typename I>
inline int32_t isum32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  const int32x4_t s = I::dot(I::dot(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
  return vaddvq_s32(s);
}

inline float tree8(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

// The 32 integer weights of a block as two int8x16 (elements 0..15, 16..31): quant_legacy.h's
// block_ints, and Q8_0's and Q4_0's (q, and nibble - 8).
inline void block_halves(const BlockQ8_0& b, int8x16_t* w0, int8x16_t* w1) {
  *w0 = vld1q_s8(b.qs);
  *w1 = vld1q_s8(b.qs + 16);
}
inline void nibbles(const uint8_t* qs, uint8x16_t* lo, uint8x16_t* hi) {
  const uint8x16_t q = vld1q_u8(qs);
  *lo = vandq_u8(q, vdupq_n_u8(15));
  *hi = vshrq_n_u8(q, 4);
}
inline void block_halves(const BlockQ4_0& b, int8x16_t* w0, int8x16_t* w1) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  *w0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));
  *w1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));
}
inline void block_halves(const BlockQ4_1& b, int8x16_t* w0, int8x16_t* w1) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  *w0 = vreinterpretq_s8_u8(lo);
  *w1 = vreinterpretq_s8_u8(hi);
}
// 16 * bit i of qh (little-endian uint32) for elements i = 16h .. 16h + 15.
inline uint8x16_t fifth_bits(const uint8_t* qh, int h) {
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t v = vcombine_u8(vdup_n_u8(qh[2 * h]), vdup_n_u8(qh[2 * h + 1]));
  return vandq_u8(vtstq_u8(v, vld1q_u8(kBit)), vdupq_n_u8(16));
}
template <typename Block>  // Q5_0 (q - 16) or Q5_1 (q)
inline void q5_halves(const Block& b, int8x16_t* w0, int8x16_t* w1, int8_t offset) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  lo = vorrq_u8(lo, fifth_bits(b.qh, 0));
  hi = vorrq_u8(hi, fifth_bits(b.qh, 1));
  *w0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(offset));
  *w1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(offset));
}
inline void block_halves(const BlockQ5_0& b, int8x16_t* w0, int8x16_t* w1) {
  q5_halves(b, w0, w1, 16);
}
inline void block_halves(const BlockQ5_1& b, int8x16_t* w0, int8x16_t* w1) {
  q5_halves(b, w0, w1, 0);
}
inline void table_halves(const uint8_t* qs, const int8_t* table, int8x16_t* w0, int8x16_t* w1) {
  uint8x16_t lo, hi;
  nibbles(qs, &lo, &hi);
  const int8x16_t t = vld1q_s8(table);
  *w0 = vqtbl1q_s8(t, lo);
  *w1 = vqtbl1q_s8(t, hi);
}
inline void block_halves(const BlockIQ4_NL& b, int8x16_t* w0, int8x16_t* w1) {
  table_halves(b.qs, kIq4nlValues, w0, w1);
}
inline void block_halves(const BlockMXFP4& b, int8x16_t* w0, int8x16_t* w1) {
  table_halves(b.qs, kMxfp4Values, w0, w1);
}

inline float block_scale(const BlockMXFP4& b) {
  return e8m0_half_to_float(b.e);
}
template <typename Block>
inline float block_scale(const Block& b) {
  return fp16_to_float(b.d);
}

// Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4: dot-v1's block order (dot_blocks8 / dot_scaled).
template <typename I, typename Block>
float dot_q32(const Block* w, const ActQ8* x, size_t n) {
  float acc[kBlockLanes] = {};
  for (size_t b = 0; b < n / kQBlock; ++b) {
    int8x16_t w0, w1;
    block_halves(w[b], &w0, &w1);
    const float p = block_scale(w[b]) * x[b].d;
    acc[b % kBlockLanes] = std::fma(p, float(isum32<I>(w0, w1, x[b].qs)), acc[b % kBlockLanes]);
  }
  return tree8(acc);
}

// Q4_1 and Q5_1: the scaled sum and the min's sum (of the activation quants) in their own lanes.
template <typename I, typename Block>
float dot_q32_min(const Block* w, const ActQ8* x, size_t n) {
  float acc[kBlockLanes] = {}, accm[kBlockLanes] = {};
  for (size_t b = 0; b < n / kQBlock; ++b) {
    const size_t l = b % kBlockLanes;
    int8x16_t w0, w1;
    block_halves(w[b], &w0, &w1);
    const float p = fp16_to_float(w[b].d) * x[b].d;
    const float pm = fp16_to_float(w[b].m) * x[b].d;
    const int32_t xsum =
        int32_t(vaddlvq_s8(vld1q_s8(x[b].qs))) + int32_t(vaddlvq_s8(vld1q_s8(x[b].qs + 16)));
    acc[l] = std::fma(p, float(isum32<I>(w0, w1, x[b].qs)), acc[l]);
    accm[l] = std::fma(pm, float(xsum), accm[l]);
  }
  const float s = tree8(acc);
  return s + tree8(accm);
}

// A gemm of per-(row, token) dots over blocks of kind X (ActQ8 or ActQ8K activations).
template <typename Block, typename X, float (*Dot)(const Block*, const X*, size_t)>
void gemm_blocks(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                 size_t n_tok, float* y, size_t ldy) {
  const size_t x_row = n_cols / (sizeof(X) == sizeof(ActQ8) ? kQBlock : kSuperBlock);
  const X* xq = static_cast<const X*>(x);
  for (size_t r = 0; r < n_rows; ++r) {
    const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t) y[t * ldy + r] = Dot(wr, xq + t * x_row, n_cols);
  }
}

// n floats (a multiple of 4) times id, rounded half to even (FCVTNS, as nearbyint in the default
// rounding mode), narrowed to int8 (the values lie in [-127, 127]).
inline void quantize_n(const float* x, float id, int8_t* dst, size_t n) {
  const float32x4_t idv = vdupq_n_f32(id);
  for (size_t i = 0; i < n; i += 16) {
    int32x4_t q[4];
    for (int j = 0; j < 4; ++j) q[j] = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + i + 4 * j), idv));
    const int16x8_t a = vcombine_s16(vqmovn_s32(q[0]), vqmovn_s32(q[1]));
    const int16x8_t b = vcombine_s16(vqmovn_s32(q[2]), vqmovn_s32(q[3]));
    vst1q_s8(dst + i, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
  }
}

// max |x| over n floats (a multiple of 4), from 0, as std::fmax does (FMAXNM).
inline float amax_n(const float* x, size_t n) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (size_t i = 0; i < n; i += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxnmvq_f32(m);
}

// quantize_act_q8: per block of 32, d = amax / 127, id = d != 0 ? 1 / d : 0, q = nearbyint(x*id).
void quantize_act_q8_neon(const float* x, ActQ8* dst, size_t n) {
  for (size_t k = 0; k < n / kQBlock; ++k) {
    const float* xb = x + k * kQBlock;
    const float d = amax_n(xb, kQBlock) / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[k].d = d;
    quantize_n(xb, id, dst[k].qs, kQBlock);
  }
}

// quantize_act_q8k: the same per block of 256, and the exact sums of 16 consecutive q.
void quantize_act_q8k_neon(const float* x, ActQ8K* dst, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float* xb = x + b * kSuperBlock;
    const float d = amax_n(xb, kSuperBlock) / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = d;
    quantize_n(xb, id, dst[b].qs, kSuperBlock);
    for (int g = 0; g < 16; ++g)
      dst[b].bsums[g] = int16_t(vaddlvq_s8(vld1q_s8(dst[b].qs + 16 * g)));
  }
}

}  // namespace
}  // namespace tzero::arm
