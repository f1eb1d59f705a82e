// NEON versions of exp-v1, silu-v1, gelu-v1 (kernels/math.h) and the attn-v2 pieces
// (kernels/attention.h): each lane runs exp_ref's operations in its order (FRINTN is nearbyint's
// ties-to-even, vfmaq_f32 its fma), the scores are dot-v1, the block's sum is sum_f32_ref's 16
// lanes and o[d] = fma(e[t], v_t[d], o[d]) for t ascending. Internal linkage; included by
// kernels_neon.h only.
#pragma once

#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/neon_float.h"
#include "kernels/attention.h"
#include "kernels/math.h"

namespace tzero::arm {
namespace {

// exp_ref on four lanes: NaN stays NaN, x > 88.72283 gives inf, x < -87.33654 gives 0.
inline float32x4_t exp4(float32x4_t x) {
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmaq_f32(x, n, vdupq_n_f32(-0.693145751953125f));
  r = vfmaq_f32(r, n, vdupq_n_f32(-1.428606765330187045e-06f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  // 2^n as two factors 2^(n/2) (C's division, toward zero) and 2^(n - n/2). Lanes outside the
  // range (and NaN) compute garbage here and are replaced below.
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(
      vaddq_s32(ni, vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32(ni), 31))), 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  float32x4_t y = vmulq_f32(vmulq_f32(p, s1), s2);
  y = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(88.72283f)), vdupq_n_f32(INFINITY), y);
  y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(-87.33654f)), vdupq_n_f32(0.0f), y);
  return vbslq_f32(vceqq_f32(x, x), y, x);  // NaN lanes: x itself
}

inline float32x4_t silu4(float32x4_t x) {
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(x))));
}

inline float32x4_t gelu4(float32x4_t x) {
  const float32x4_t x3 = vmulq_f32(vmulq_f32(x, x), x);
  const float32x4_t w = vaddq_f32(x, vmulq_f32(vdupq_n_f32(0.044715f), x3));
  const float32x4_t t = vmulq_f32(vdupq_n_f32(1.59576912160573071f), w);
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(t))));
}

// out = act(gate) * up; the n % 4 tail by the scalar reference (the same bits).
template <float32x4_t (*Act4)(float32x4_t), float (*Act1)(float)>
void glu_neon(const float* gate, const float* up, size_t n, float* out) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(out + i, vmulq_f32(Act4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  for (; i < n; ++i) out[i] = Act1(gate[i]) * up[i];
}

// attn_scores_ref: s[g][t - t0] = dot-v1(q_g, k_t) * scale, m[g] = fmax(m[g], s).
void attn_scores_neon(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                      size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m) {
  for (size_t g = 0; g < n_q; ++g)
    for (size_t t = t0; t < t1; ++t) {
      const float x = dot16<FloatW::F32>(q + g * q_stride, k.row(t), head_dim) * scale;
      s[g * ld + (t - t0)] = x;
      m[g] = std::fmax(m[g], x);
    }
}

// sum_f32_ref: 16 lanes of plain adds from +0 (lane l takes k = l, l + 16, ...), the tree.
inline float sum16(const float* x, size_t n) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = vaddq_f32(a0, vld1q_f32(x + k));
    a1 = vaddq_f32(a1, vld1q_f32(x + k + 4));
    a2 = vaddq_f32(a2, vld1q_f32(x + k + 8));
    a3 = vaddq_f32(a3, vld1q_f32(x + k + 12));
  }
  float acc[16];
  vst1q_f32(acc, a0);
  vst1q_f32(acc + 4, a1);
  vst1q_f32(acc + 8, a2);
  vst1q_f32(acc + 12, a3);
  for (size_t l = 0; k < n; ++k, ++l) acc[l] += x[k];
  return tree16(acc);
}

// attn_block_ref: e = exp(s - m), z = sum16(e), o[d] = fma(e[t], v_t[d], o[d]) for t ascending
// from +0; 16 output dims at a time stay in registers over all t.
void attn_block_neon(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                     size_t t1, size_t head_dim, float* z, float* o, size_t o_stride) {
  const size_t n = t1 - t0;
  for (size_t g = 0; g < n_q; ++g) {
    float* e = s + g * ld;
    const float32x4_t mg = vdupq_n_f32(m[g]);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(e + i, exp4(vsubq_f32(vld1q_f32(e + i), mg)));
    for (; i < n; ++i) e[i] = exp_ref(e[i] - m[g]);
    z[g] = sum16(e, n);
    float* og = o + g * o_stride;
    size_t d0 = 0;
    for (; d0 + 16 <= head_dim; d0 += 16) {
      float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
      for (size_t t = t0; t < t1; ++t) {
        const float* vt = v.row(t) + d0;
        const float32x4_t et = vdupq_n_f32(e[t - t0]);
        a0 = vfmaq_f32(a0, et, vld1q_f32(vt));
        a1 = vfmaq_f32(a1, et, vld1q_f32(vt + 4));
        a2 = vfmaq_f32(a2, et, vld1q_f32(vt + 8));
        a3 = vfmaq_f32(a3, et, vld1q_f32(vt + 12));
      }
      vst1q_f32(og + d0, a0);
      vst1q_f32(og + d0 + 4, a1);
      vst1q_f32(og + d0 + 8, a2);
      vst1q_f32(og + d0 + 12, a3);
    }
    for (size_t d = d0; d < head_dim; ++d) og[d] = 0.0f;
    if (d0 < head_dim)
      for (size_t t = t0; t < t1; ++t) {
        const float* vt = v.row(t);
        for (size_t d = d0; d < head_dim; ++d) og[d] = std::fma(e[t - t0], vt[d], og[d]);
      }
  }
}

}  // namespace
}  // namespace tzero::arm
