#pragma once
// Shared helpers of the kernel tests (test_kernels_ref.cpp, test_kernels_canon.cpp): the
// scalar reference kernels (src/kernels) are tested two ways:
//
// KernelRef.*   tolerance tests against an OUTSIDE reference: the same function evaluated in
//               float64. Each bound is derived in a comment from the kernel's rounding steps
//               (u = 2^-24 is the unit roundoff of float, gamma(m) = m u / (1 - m u) bounds the
//               relative error of m chained roundings); a broken kernel (a lost element, a wrong
//               pairing, a wrong scale) misses these bounds by orders of magnitude.
// KernelCanon.* bit tests of the CANONICAL ORDERS documented in dot.h, ops.h, math.h and quant.h:
//               an independent re-implementation written from those comments must give exactly
//               the kernel's bits (compared as uint32, never with a tolerance), and plausible
//               non-canonical orders must give different bits on some input, which proves the
//               bit tests would notice a change of order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/dot.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"
#include "kernels/ops.h"
#include "kernels/quant.h"

namespace tzero {
namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of float (round to nearest)
inline double gamma(double m) {
  return m * kU / (1.0 - m * kU);
}
inline size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}
inline uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

inline float rnd(SplitMix64& r, float lo, float hi) {
  return lo + (hi - lo) * r.uniform();
}
inline std::vector<float> rand_vec(SplitMix64& r, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  for (auto& x : v) x = rnd(r, lo, hi);
  return v;
}

// exp_ref's documented accuracy ("about 1 ulp"); KernelRef.ExpMaxUlpError asserts it, and the
// bounds of the kernels built on exp use it: 1 ulp of a float is at most 2^-23 = 2u relative.
constexpr double kExpMaxUlp = 1.0;
constexpr double kExpRel = kExpMaxUlp * 2 * kU;

const std::vector<size_t> kLengths = {1,   2,   3,   5,   15,  16,  17,  31,  32,   33,   47,  64,
                                      100, 127, 128, 129, 255, 256, 257, 300, 1000, 2048, 5632};

// ---- Canonical orders, re-implemented from the comments (not from the .cpp files) ----------

namespace canon {

// dot.h: "acc[l] += acc[l+8] for l < 8, acc[l] += acc[l+4] for l < 4, then +2, then +1".
inline float tree8(const float* a) {
  float c[4];
  for (int l = 0; l < 4; ++l) c[l] = a[l] + a[l + 4];
  const float d0 = c[0] + c[2], d1 = c[1] + c[3];
  return d0 + d1;
}
inline float tree16(const float* a) {  // the first level (+8), then the 8-lane tree
  float b[8];
  for (int l = 0; l < 8; ++l) b[l] = a[l] + a[l + 8];
  return tree8(b);
}

// dot.h float weights: lane l runs over k = l, l+16, ... with fma, from +0.0; then the tree.
inline float dot16(const std::function<float(size_t)>& w, const float* x, size_t n) {
  float lane[16];
  for (size_t l = 0; l < 16; ++l) {
    float a = 0.0f;
    for (size_t k = l; k < n; k += 16) a = std::fma(w(k), x[k], a);
    lane[l] = a;
  }
  return tree16(lane);
}
// sum_f32_ref: the same lanes with plain adds; fma(1, x, a) rounds a + x once, like a + x.
inline float sum16(const float* x, size_t n) {
  return dot16([](size_t) { return 1.0f; }, x, n);
}
inline float widen_half(uint16_t h) {
  return fp16_to_float_compute(h);
}
inline float widen_bf16(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

// quant.h layouts, unpacked to signed integers.
inline std::array<int, 32> unpack(const BlockQ8_0& b) {
  std::array<int, 32> q;
  for (int i = 0; i < 32; ++i) q[i] = b.qs[i];
  return q;
}
inline std::array<int, 32> unpack(const BlockQ4_0& b) {
  std::array<int, 32> q;
  for (int i = 0; i < 16; ++i) {
    q[i] = (b.qs[i] & 15) - 8;
    q[i + 16] = (b.qs[i] >> 4) - 8;
  }
  return q;
}
// dot.h quantized: exact int32 block sums, p = d_w * d_x in float, 8 block lanes with fma.
template <typename Block>
inline float dot_blocks(const Block* w, const ActQ8* x, size_t n) {
  const size_t nb = n / 32;
  float lane[8];
  for (size_t l = 0; l < 8; ++l) {
    float a = 0.0f;
    for (size_t b = l; b < nb; b += 8) {
      const auto q = unpack(w[b]);
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) s += q[i] * int32_t(x[b].qs[i]);
      const float p = widen_half(w[b].d) * x[b].d;
      a = std::fma(p, float(s), a);
    }
    lane[l] = a;
  }
  return tree8(lane);
}

// math.h exp-v1. ldexp(p, n) equals the kernel's two-factor scaling: the first factor is exact.
inline float exp(float x) {
  if (std::isnan(x)) return x;
  if (x > 88.72283f) return INFINITY;
  if (x < -87.33654f) return 0.0f;
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693145751953125f, x);
  r = std::fma(n, -1.428606765330187045e-06f, r);
  const float c[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                      1.0f / 6.0f,    0.5f,          1.0f,          1.0f};
  float p = c[0];
  for (int i = 1; i < 8; ++i) p = std::fma(p, r, c[i]);
  return std::ldexp(p, int(n));
}
inline float silu(float x) {
  return x / (1.0f + canon::exp(-x));
}
// gelu-v1 as DETERMINISM.md writes it.
inline float gelu(float x) {
  const float x3 = (x * x) * x;
  const float w = x + 0.044715f * x3;
  const float t = 1.59576912160573071f * w;
  return x / (1.0f + canon::exp(-t));
}

}  // namespace canon

}  // namespace
}  // namespace tzero
