// NEON float kernels: dot-v1's 16-lane float dot (f32, f16, bf16 weights), the float gemms,
// dot_f32 and RMSNorm (kernels/dot.h, kernels/ops.h). Lane l of the reference is lane l % 4 of
// register l / 4; vfmaq_f32 is the fused multiply-add std::fma is, and the tree adds the same
// pairs in the same order. Internal linkage; included by kernels_neon.h only.
#pragma once

#include <arm_neon.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/dot.h"

namespace tzero::arm {
namespace {

// acc[l] += acc[l + 8], then + 4, + 2, + 1 (dot.cpp's reduce16) over a spilled accumulator.
inline float tree16(float* acc) {
  for (int l = 0; l < 8; ++l) acc[l] += acc[l + 8];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

// Four weights widened exactly to float: f32 as they are, f16 by FCVTL, bf16 by a 16-bit shift.
enum class FloatW { F32, F16, BF16 };

template <FloatW K>
inline float32x4_t load_w4(const void* w, size_t k) {
  if constexpr (K == FloatW::F32) {
    return vld1q_f32(static_cast<const float*>(w) + k);
  } else if constexpr (K == FloatW::F16) {
    const uint16x4_t h = vld1_u16(static_cast<const uint16_t*>(w) + k);
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
  } else {
    const uint16x4_t h = vld1_u16(static_cast<const uint16_t*>(w) + k);
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
  }
}

template <FloatW K>
inline float widen1(const void* w, size_t k) {
  if constexpr (K == FloatW::F32) return static_cast<const float*>(w)[k];
  const uint16_t h = static_cast<const uint16_t*>(w)[k];
  if constexpr (K == FloatW::F16)
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
  return vgetq_lane_f32(vreinterpretq_f32_u32(vshll_n_u16(vdup_n_u16(h), 16)), 0);
}

// dot-v1 of n weights (of kind K) with n floats: lane l accumulates k = l, l + 16, ... from +0;
// the k % 16 tail goes to its lanes one fma at a time (the lanes past it keep their value).
template <FloatW K>
float dot16(const void* w, const float* x, size_t n) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = vfmaq_f32(a0, load_w4<K>(w, k), vld1q_f32(x + k));
    a1 = vfmaq_f32(a1, load_w4<K>(w, k + 4), vld1q_f32(x + k + 4));
    a2 = vfmaq_f32(a2, load_w4<K>(w, k + 8), vld1q_f32(x + k + 8));
    a3 = vfmaq_f32(a3, load_w4<K>(w, k + 12), vld1q_f32(x + k + 12));
  }
  float acc[16];
  vst1q_f32(acc, a0);
  vst1q_f32(acc + 4, a1);
  vst1q_f32(acc + 8, a2);
  vst1q_f32(acc + 12, a3);
  for (size_t l = 0; k < n; ++k, ++l) acc[l] = std::fma(widen1<K>(w, k), x[k], acc[l]);
  return tree16(acc);
}

// y[t * ldy + r] = dot16(row r, token t). With several tokens an f16 or bf16 row is widened once
// into a buffer (exact) and every token reads the floats: the same products, the same order.
template <FloatW K>
void gemm_float_neon(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                     size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const float* xf = static_cast<const float*>(x);
  thread_local std::vector<float> row;
  for (size_t r = 0; r < n_rows; ++r) {
    const void* wr = w + r * w_row_bytes;
    if (K != FloatW::F32 && n_tok > 1) {
      row.resize(n_cols);
      size_t k = 0;
      for (; k + 4 <= n_cols; k += 4) vst1q_f32(row.data() + k, load_w4<K>(wr, k));
      for (; k < n_cols; ++k) row[k] = widen1<K>(wr, k);
      for (size_t t = 0; t < n_tok; ++t)
        y[t * ldy + r] = dot16<FloatW::F32>(row.data(), xf + t * n_cols, n_cols);
    } else {
      for (size_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot16<K>(wr, xf + t * n_cols, n_cols);
    }
  }
}

float dot_f32_neon(const float* a, const float* b, size_t n) {
  return dot16<FloatW::F32>(a, b, n);
}

// ops-v1 RMSNorm: ss by dot-v1, scale = 1 / sqrtf(ss / n + eps), out = (x * scale) * w.
void rmsnorm_neon(const float* x, const float* w, float eps, size_t n, float* out) {
  const float ss = dot16<FloatW::F32>(x, x, n);
  const float mean = ss / float(n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  const float32x4_t s = vdupq_n_f32(scale);
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(out + i, vmulq_f32(vmulq_f32(vld1q_f32(x + i), s), vld1q_f32(w + i)));
  for (; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

}  // namespace
}  // namespace tzero::arm
