// attn-v2 pieces (kernels/attention.h) with zmm vectors; included by avx512.cpp only.
//
// Scores, 16 keys at a time: key i's dot-v1 accumulator is one zmm whose lane l is the dot's
// lane l (fma over dimensions l, l+16, ... ascending, from +0.0); the 16 accumulators are then
// reduced together by the dot-v1 tree (l + l+8, then +4, +2, +1), each step one add per pair of
// registers after a shuffle, which leaves the 16 scores in one register. The 16 key rows stay
// in L1 while every head of the query group uses them.
//
// Values: tiles of up to 4 heads x 64 dimensions keep 16 accumulators in registers over the
// whole block; each (head, dimension) chain still runs over positions ascending from +0.0.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

// The dot-v1 tree applied to 16 accumulators at once; lane i of the result is a[i]'s sum.
inline __m512 reduce16x16(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i)  // lanes l + (l + 8): [a(2i) 0..7 | a(2i+1) 0..7]
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int i = 0; i < 4; ++i)  // l + (l + 4): quarter j holds key 4i + j
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int i = 0; i < 2; ++i)  // l + (l + 2): quarter j holds keys 8i + j, 8i + 4 + j
    d[i] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(c[2 * i], c[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // l + (l + 1): element 4j + r holds key 4r + j; put key i in lane i.
  const __m512 e = _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, e);
}

// Dot-v1 of q with 16 rows (rows[i], head_dim floats each); lanes past a head_dim tail keep
// their accumulator (mask3), as in Avx512::dot16. NC > 0: head_dim == 16 * NC, q held in
// registers and each key's chain run to its end (16 independent chains; one row pointer live at
// a time). NC == 0: any head_dim, chunk by chunk over all 16 keys.
template <int NC>
inline __m512 dot16_keys(const float* q, const float* const* rows, size_t head_dim) {
  __m512 acc[16];
  if constexpr (NC > 0) {
    __m512 qv[NC];
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) qv[c] = _mm512_loadu_ps(q + 16 * c);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      const float* r = rows[i];
      __m512 a = _mm512_setzero_ps();
#pragma GCC unroll 16
      for (int c = 0; c < NC; ++c) a = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(r + 16 * c), a);
      acc[i] = a;
    }
    return reduce16x16(acc);
  }
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  size_t c = 0;
  for (; c + 16 <= head_dim; c += 16) {
    const __m512 qv = _mm512_loadu_ps(q + c);
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(rows[i] + c), acc[i]);
  }
  if (c < head_dim) {
    const __mmask16 mk = __mmask16((1u << (head_dim - c)) - 1);
    const __m512 qv = _mm512_maskz_loadu_ps(mk, q + c);
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_mask3_fmadd_ps(qv, _mm512_maskz_loadu_ps(mk, rows[i] + c), acc[i], mk);
  }
  return reduce16x16(acc);
}

void attn_scores_avx512(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                        size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m) {
  const __m512 sv = _mm512_set1_ps(scale);
  const float* rows[16];
  size_t n_rows = 0, first = t0;  // rows[0..n_rows) are positions first, first + 1, ...
  auto flush = [&]() {
    if (n_rows == 0) return;
    for (size_t i = n_rows; i < 16; ++i) rows[i] = rows[0];  // padding, never stored
    const __mmask16 mk = __mmask16((1u << n_rows) - 1);
    for (size_t g = 0; g < n_q; ++g) {
      const float* qg = q + g * q_stride;
      const __m512 dots = head_dim == 64    ? dot16_keys<4>(qg, rows, head_dim)
                          : head_dim == 128 ? dot16_keys<8>(qg, rows, head_dim)
                                            : dot16_keys<0>(qg, rows, head_dim);
      const __m512 x = _mm512_mul_ps(dots, sv);
      _mm512_mask_storeu_ps(s + g * ld + (first - t0), mk, x);
      const float mx = _mm512_mask_reduce_max_ps(mk, x);
      m[g] = std::fmax(m[g], mx);
    }
    first += n_rows;
    n_rows = 0;
  };
  k.for_each_run(t0, t1, [&](const float* run, size_t, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      rows[n_rows++] = run + i * k.stride;
      if (n_rows == 16) flush();
    }
  });
  flush();
}

// The AVX-512 vector policy of values_tile (attention_x86.h): masked tail vectors.
struct Zmm {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static Vec set1(float x) { return _mm512_set1_ps(x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, Vec v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
};

template <int NG>
void values_heads_avx512(const float* e, size_t ld, const KvRows& v, size_t t0, size_t t1,
                         size_t head_dim, float* o, size_t o_stride) {
  for (size_t d = 0; d < head_dim; d += 64) {
    const size_t left = std::min<size_t>(64, head_dim - d);
    const size_t nv = (left + 15) / 16;
    const __mmask16 tail = left % 16 ? __mmask16((1u << (left % 16)) - 1) : __mmask16(0xffff);
    switch (nv) {
      case 1:
        values_tile<Zmm, NG, 1>(e, ld, v, t0, t1, d, tail, o, o_stride);
        break;
      case 2:
        values_tile<Zmm, NG, 2>(e, ld, v, t0, t1, d, tail, o, o_stride);
        break;
      case 3:
        values_tile<Zmm, NG, 3>(e, ld, v, t0, t1, d, tail, o, o_stride);
        break;
      default:
        values_tile<Zmm, NG, 4>(e, ld, v, t0, t1, d, tail, o, o_stride);
        break;
    }
  }
}

void attn_block_avx512(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                       size_t t1, size_t head_dim, float* z, float* o, size_t o_stride) {
  block_weights(s, ld, n_q, m, t1 - t0, z);
  size_t g = 0;
  for (; g + 4 <= n_q; g += 4)
    values_heads_avx512<4>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
  if (n_q - g == 3)
    values_heads_avx512<3>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
  else if (n_q - g == 2)
    values_heads_avx512<2>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
  else if (n_q - g == 1)
    values_heads_avx512<1>(s + g * ld, ld, v, t0, t1, head_dim, o + g * o_stride, o_stride);
}

}  // namespace
}  // namespace tzero::x86
