// NEON kernels of the K-quant super-block types (kernels/quant_k.h, quant_k2.h): the exact
// integers A (and B) of a super-block from NEON int8 products (policy I, as neon_quant.h), then
// the reference's own float order (kernels/dot_k_orders.h), so the float part is the very code
// of the scalar reference. Q4_K, Q5_K and Q6_K unpack their quants in vector registers; Q2_K,
// Q3_K and IQ4_XS unpack with the reference's scalar functions and sum with NEON. Internal
// linkage; included by kernels_neon.h only.
#pragma once

#include <arm_neon.h>

#include "kernels/arm/neon_quant.h"
#include "kernels/dot_k_orders.h"
#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"

namespace tzero::arm {
namespace {

template <typename I>
inline int32_t isum16(int8x16_t w, const int8_t* x) {
  return vaddvq_s32(I::dot(vdupq_n_s32(0), w, vld1q_s8(x)));
}

// Q4_K / Q5_K: A = sum sc[j] * sum(q * x_q) over sub-blocks of 32, B = sum m[j] * (bsums[2j] +
// bsums[2j + 1]). Chunk c's 32 bytes hold sub-block 2c in their low nibbles, 2c + 1 in the high
// ones; Q5_K adds 16 * bit 2c (low) or 2c + 1 (high) of qh[l].
template <typename I, bool kQ5, typename Block>
inline void k4_ints(const Block& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) q4_k_scale_min(w.scales, j, &sc[j], &m[j]);
  int32_t sa = 0;
  for (int c = 0; c < 4; ++c) {
    uint8x16_t lo[2], hi[2];
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t q = vld1q_u8(w.qs + 32 * c + 16 * h);
      lo[h] = vandq_u8(q, vdupq_n_u8(15));
      hi[h] = vshrq_n_u8(q, 4);
      if constexpr (kQ5) {
        const uint8x16_t qh = vld1q_u8(w.qh + 16 * h), one = vdupq_n_u8(1);
        const uint8x16_t b_lo = vandq_u8(vshlq_u8(qh, vdupq_n_s8(int8_t(-2 * c))), one);
        const uint8x16_t b_hi = vandq_u8(vshlq_u8(qh, vdupq_n_s8(int8_t(-2 * c - 1))), one);
        lo[h] = vorrq_u8(lo[h], vshlq_n_u8(b_lo, 4));
        hi[h] = vorrq_u8(hi[h], vshlq_n_u8(b_hi, 4));
      }
    }
    const int8_t* xq = x.qs + 64 * c;
    const int32_t s_lo = isum32<I>(vreinterpretq_s8_u8(lo[0]), vreinterpretq_s8_u8(lo[1]), xq);
    const int32_t s_hi = isum32<I>(vreinterpretq_s8_u8(hi[0]), vreinterpretq_s8_u8(hi[1]), xq + 32);
    sa += sc[2 * c] * s_lo + sc[2 * c + 1] * s_hi;
  }
  int32_t sb = 0;
  for (int j = 0; j < 8; ++j) sb += m[j] * (int32_t(x.bsums[2 * j]) + int32_t(x.bsums[2 * j + 1]));
  *a = sa;
  *b = sb;
}
template <typename I>
void q4_k_ints_neon(const BlockQ4_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  k4_ints<I, false>(w, x, a, b);
}
template <typename I>
void q5_k_ints_neon(const BlockQ5_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  k4_ints<I, true>(w, x, a, b);
}

// Q6_K: A = sum scales[i] * sum((q - 32) * x_q) over sub-blocks of 16. Element 128h + 32g + l
// has its low 4 bits in ql[64h + 32(g & 1) + l] (low nibble for g < 2) and its high 2 bits in
// bits 2g, 2g + 1 of qh[32h + l]; sub-block i = 8h + 2g + (l >= 16).
template <typename I>
int32_t q6_k_int_neon(const BlockQ6_K& w, const ActQ8K& x) {
  int32_t sa = 0;
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int lh = 0; lh < 2; ++lh) {
        const uint8x16_t ql = vld1q_u8(w.ql + 64 * h + 32 * (g & 1) + 16 * lh);
        const uint8x16_t low4 = g < 2 ? vandq_u8(ql, vdupq_n_u8(15)) : vshrq_n_u8(ql, 4);
        const uint8x16_t qh = vld1q_u8(w.qh + 32 * h + 16 * lh);
        const uint8x16_t high2 = vandq_u8(vshlq_u8(qh, vdupq_n_s8(int8_t(-2 * g))), vdupq_n_u8(3));
        const int8x16_t q =
            vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low4, vshlq_n_u8(high2, 4))), vdupq_n_s8(32));
        const int i = 8 * h + 2 * g + lh;
        sa += int32_t(w.scales[i]) * isum16<I>(q, x.qs + 16 * i);
      }
  return sa;
}

// IQ4_XS, Q3_K, Q2_K: the reference's unpack (quant_k2.h), NEON sums per sub-block.
template <typename I>
int32_t iq4_xs_int_neon(const BlockIQ4_XS& w, const ActQ8K& x) {
  int8_t v[256];
  int sc[8];
  iq4_xs_unpack(w, v);
  iq4_xs_scales(w, sc);
  int32_t a = 0;
  for (int j = 0; j < 8; ++j)
    a += sc[j] * isum32<I>(vld1q_s8(v + 32 * j), vld1q_s8(v + 32 * j + 16), x.qs + 32 * j);
  return a;
}

template <typename I>
int32_t q3_k_int_neon(const BlockQ3_K& w, const ActQ8K& x) {
  int8_t v[256];
  int sc[16];
  q3_k_unpack(w, v);
  q3_k_scales(w, sc);
  int32_t a = 0;
  for (int i = 0; i < 16; ++i) a += sc[i] * isum16<I>(vld1q_s8(v + 16 * i), x.qs + 16 * i);
  return a;
}

template <typename I>
void q2_k_ints_neon(const BlockQ2_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  uint8_t q[256];
  q2_k_unpack(w, q);
  int32_t sa = 0, sb = 0;
  for (int i = 0; i < 16; ++i) {
    sa += int32_t(w.scales[i] & 15) *
          isum16<I>(vreinterpretq_s8_u8(vld1q_u8(q + 16 * i)), x.qs + 16 * i);
    sb += int32_t(w.scales[i] >> 4) * int32_t(x.bsums[i]);
  }
  *a = sa;
  *b = sb;
}

template <typename I>
float dot_q4_k_neon(const BlockQ4_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ4_K, q4_k_ints_neon<I>>(w, x, n);
}
template <typename I>
float dot_q5_k_neon(const BlockQ5_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ5_K, q5_k_ints_neon<I>>(w, x, n);
}
template <typename I>
float dot_q6_k_neon(const BlockQ6_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockQ6_K, q6_k_int_neon<I>>(w, x, n);
}
template <typename I>
float dot_iq4_xs_neon(const BlockIQ4_XS* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockIQ4_XS, iq4_xs_int_neon<I>>(w, x, n);
}
template <typename I>
float dot_q3_k_neon(const BlockQ3_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockQ3_K, q3_k_int_neon<I>>(w, x, n);
}
template <typename I>
float dot_q2_k_neon(const BlockQ2_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ2_K, q2_k_ints_neon<I>>(w, x, n);
}

}  // namespace
}  // namespace tzero::arm
