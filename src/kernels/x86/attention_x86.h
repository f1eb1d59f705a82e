// attn-v2 pieces (kernels/attention.h) with AVX2 vectors, written once over the ISA policy P of
// kernels_impl.h (P::dot16). avx512.cpp replaces them with its zmm versions
// (attention_avx512.h); both give the reference's bits.
//
// Scores: each key row is loaded once per query group and dotted with every head of the group
// (dot-v1, one 16-lane dot per (head, key)). Values: every head tile of up to 2 heads and every
// dimension chunk of up to 32 floats keeps its accumulators in registers over the whole block,
// so the fma chains of different (head, dimension) pairs overlap; each chain still runs over
// positions in ascending order from +0.0, as attn-v2 says.
#pragma once

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

template <typename P>
void attn_scores_x86(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                     size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m) {
  k.for_each_run(t0, t1, [&](const float* rows, size_t first, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const float* row = rows + i * k.stride;
      for (size_t g = 0; g < n_q; ++g) {
        const float x = P::dot16(q + g * q_stride, row, head_dim, false) * scale;
        s[g * ld + (first + i - t0)] = x;
        m[g] = std::fmax(m[g], x);
      }
    }
  });
}

// e = exp_ref(s - m) over n scores in place.
inline void exp_shifted(float* e, size_t n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(e + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(e + i), mv)));
  if (i < n) {
    float tmp[8] = {};
    std::memcpy(tmp, e + i, (n - i) * sizeof(float));
    _mm256_storeu_ps(tmp, exp8(_mm256_sub_ps(_mm256_loadu_ps(tmp), mv)));
    std::memcpy(e + i, tmp, (n - i) * sizeof(float));
  }
}

// o[g][d0 .. d0 + V::kLanes * NV) for NG heads: one fma chain per lane over the positions of
// the block, ascending, from +0.0. V is the vector policy (Ymm below, Zmm in
// attention_avx512.h): the last vector is loaded and stored under `tail` (its lanes past the
// head are computed on zeros and never stored).
template <typename V, int NG, int NV>
void values_tile(const float* e, size_t ld, const KvRows& v, size_t t0, size_t t1, size_t d0,
                 typename V::Mask tail, float* o, size_t o_stride) {
  typename V::Vec acc[NG][NV];
#pragma GCC unroll 16
  for (int g = 0; g < NG; ++g)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[g][j] = V::zero();
  for (size_t t = t0; t < t1;) {  // the KV runs, without a callback that would spill acc
    const float* rows;
    const size_t n = v.run_at(t, t1, &rows);
    const float* eg = e + (t - t0);
    for (size_t i = 0; i < n; ++i) {
      const float* row = rows + i * v.stride + d0;
      typename V::Vec vv[NV];
#pragma GCC unroll 16
      for (int j = 0; j + 1 < NV; ++j) vv[j] = V::load(row + V::kLanes * j);
      vv[NV - 1] = V::load(row + V::kLanes * (NV - 1), tail);
#pragma GCC unroll 16
      for (int g = 0; g < NG; ++g) {
        const typename V::Vec w = V::set1(eg[size_t(g) * ld + i]);
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j) acc[g][j] = V::fma(w, vv[j], acc[g][j]);
      }
    }
    t += n;
  }
#pragma GCC unroll 16
  for (int g = 0; g < NG; ++g) {
    float* og = o + size_t(g) * o_stride + d0;
#pragma GCC unroll 16
    for (int j = 0; j + 1 < NV; ++j) V::store(og + V::kLanes * j, acc[g][j]);
    V::store(og + V::kLanes * (NV - 1), acc[g][NV - 1], tail);
  }
}

// The AVX2 vector policy of values_tile: no masks (head sizes not a multiple of 8 finish with
// scalar chains).
struct Ymm {
  using Vec = __m256;
  struct Mask {};
  static constexpr int kLanes = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p, Mask = {}) { return _mm256_loadu_ps(p); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, Vec v, Mask = {}) { _mm256_storeu_ps(p, v); }
};

template <int NG>
void values_heads_avx2(const float* e, size_t ld, const KvRows& v, size_t t0, size_t t1,
                       size_t head_dim, float* o, size_t o_stride) {
  size_t d = 0;
  for (; d + 32 <= head_dim; d += 32) values_tile<Ymm, NG, 4>(e, ld, v, t0, t1, d, {}, o, o_stride);
  for (; d + 8 <= head_dim; d += 8) values_tile<Ymm, NG, 1>(e, ld, v, t0, t1, d, {}, o, o_stride);
  for (; d < head_dim; ++d)  // head sizes that are not a multiple of 8
#pragma GCC unroll 16
    for (int g = 0; g < NG; ++g) {
      float acc = 0.0f;
      for (size_t t = t0; t < t1; ++t)
        acc = std::fma(e[size_t(g) * ld + (t - t0)], v.row(t)[d], acc);
      o[size_t(g) * o_stride + d] = acc;
    }
}

// The first part of attn_block for n_q heads: scores to e = exp_ref(s - m) in place, z = their
// 16-lane sum.
inline void block_weights(float* s, size_t ld, size_t n_q, const float* m, size_t n, float* z) {
  for (size_t g = 0; g < n_q; ++g) {
    exp_shifted(s + g * ld, n, m[g]);
    z[g] = sum16(s + g * ld, n);
  }
}

void attn_block_avx2(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                     size_t t1, size_t head_dim, float* z, float* o, size_t o_stride) {
  block_weights(s, ld, n_q, m, t1 - t0, z);
  size_t g = 0;
  for (; g + 2 <= n_q; g += 2)
    values_heads_avx2<2>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
  if (g < n_q)
    values_heads_avx2<1>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
}

}  // namespace
}  // namespace tzero::x86
