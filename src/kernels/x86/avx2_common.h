// AVX2-level building blocks shared by the avx2 and avx512 kernel files. Every function has
// internal linkage (static inline) so no instruction set leaks into other translation units,
// and each mirrors an operation of the scalar reference exactly (see kernels/dot.h, ops.h,
// math.h for the canonical orders).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/quant.h"
#include "kernels/x86/decode_rows.h"

namespace tzero::x86 {

// The 16-lane tree of dot.h: acc[l] += acc[l+8], then +4, +2, +1. lo = lanes 0-7, hi = 8-15.
static inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// The 8-lane tree of dot.h (quantized dots): acc[l] += acc[l+4], then +2, +1.
static inline float reduce8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

// The 8 int32 lanes of v summed (exact).
static inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// Software prefetch of a weight stream: the cache lines of [p + kPrefetchAhead, + Bytes), into
// L1. Decode reads each weight once, in address order, and a core's hardware prefetchers alone
// kept too few lines in flight on Intel: Q4_0 from memory at 1 thread went from 8.5 to 13.0
// GB/s with 4 KiB, Q8_0 from 9.8 to 12.3 (Xeon VM, tz_bench_decode --mib 256, one row at a
// time; 0.75 -> 0.97 of a one-stream read; 2 KiB gave 0.92, 16 KiB 0.96). Zen 4 neither gained
// nor lost. A prefetch never faults, so lines past the end of a matrix cost nothing but the
// instruction (the address is formed as an integer); the bits cannot change.
constexpr size_t kPrefetchAhead = 4096;
template <size_t Bytes>
static inline void prefetch_ahead(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p) + kPrefetchAhead;
  for (size_t i = 0; i < Bytes; i += 64)
    _mm_prefetch(reinterpret_cast<const char*>(a + i), _MM_HINT_T0);
}

// The decode kernels' rows, read as kDecodeStreams ranges side by side: f(count, rows) with
// rows[k] = i + k * q (q = n_rows / kDecodeStreams) for i < q, then each leftover row alone
// (count 1), so a kernel walks count rows' blocks in turn. One core's hardware prefetchers keep
// a few lines in flight per stream: on the Intel Xeon VM one stream read 12 GB/s, 8 side by
// side 20 (kernels/stream_read.cpp). Where decode_rows.h says one row at a time (Zen 4, say),
// every row comes alone. Each row keeps its own accumulators and block order, so the bits are
// those of one row at a time either way.
constexpr size_t kDecodeStreams = 4;
template <typename F>
static inline void for_row_streams(size_t n_rows, F&& f) {
  constexpr size_t S = kDecodeStreams;
  const size_t q = decode_rows_side_by_side() ? n_rows / S : 0;
  for (size_t i = 0; i < q; ++i) {
    size_t rows[S];
    for (size_t k = 0; k < S; ++k) rows[k] = i + k * q;
    f(std::integral_constant<size_t, S>{}, rows);
  }
  for (size_t r = S * q; r < n_rows; ++r) f(std::integral_constant<size_t, 1>{}, &r);
}

// The few-token decode kernels' loop: f(std::integral_constant<int, NT>{}, t) for tokens
// t .. t + NT - 1, NT = 4 while 4 are left, then the 1 to 3 remaining, so each kernel is
// instantiated for NT = 1 .. 4 and unpacks its weights once per chunk.
template <typename F>
static inline void for_token_chunks(size_t n_tok, F&& f) {
  for (size_t t = 0; t < n_tok; t += 4) {
    switch (n_tok - t < 4 ? n_tok - t : 4) {
      case 1:
        f(std::integral_constant<int, 1>{}, t);
        break;
      case 2:
        f(std::integral_constant<int, 2>{}, t);
        break;
      case 3:
        f(std::integral_constant<int, 3>{}, t);
        break;
      default:
        f(std::integral_constant<int, 4>{}, t);
    }
  }
}

// 8 consecutive weights widened to float (exact).
static inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
static inline __m256 load8(const uint16_t* p, bool bf16) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (!bf16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Canonical 16-lane dot (dot-v1) of float-like weights with f32 activations, of S rows w[0..S)
// with the same x side by side (out[r]: the bits of a dot of row r alone; decode's rows come
// from for_row_streams, and the S independent fma chains also lift one chain's latency bound).
// The reference leaves the lanes past the tail untouched, and so must we: an accumulator can be
// -0 (an fma whose exact result is a tiny negative that underflows rounds to -0), and
// fma(0, 0, -0) is +0, so the tail lanes' fma results are blended in only where there is an
// element. Stream: the rows are read once (decode), prefetched kPrefetchAhead bytes ahead.
template <size_t S, bool Stream, typename W>
static inline void dot16_rows(const W* const* w, const float* x, size_t n, bool bf16, float* out) {
  __m256 lo[S], hi[S];
  for (size_t r = 0; r < S; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256 xlo = load8(x + k), xhi = load8(x + k + 8);
    for (size_t r = 0; r < S; ++r) {
      if constexpr (Stream)
        if (k % (64 / sizeof(W)) == 0) prefetch_ahead<64>(w[r] + k);
      if constexpr (sizeof(W) == 4) {
        lo[r] = _mm256_fmadd_ps(load8(w[r] + k), xlo, lo[r]);
        hi[r] = _mm256_fmadd_ps(load8(w[r] + k + 8), xhi, hi[r]);
      } else {
        lo[r] = _mm256_fmadd_ps(load8(w[r] + k, bf16), xlo, lo[r]);
        hi[r] = _mm256_fmadd_ps(load8(w[r] + k + 8, bf16), xhi, hi[r]);
      }
    }
  }
  if (k < n) {
    float xt[16] = {};
    std::memcpy(xt, x + k, (n - k) * sizeof(float));
    const __m256i rem = _mm256_set1_epi32(int(n - k));
    const __m256 mlo =
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(rem, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    const __m256 mhi = _mm256_castsi256_ps(
        _mm256_cmpgt_epi32(rem, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15)));
    for (size_t r = 0; r < S; ++r) {
      W wt[16] = {};
      std::memcpy(wt, w[r] + k, (n - k) * sizeof(W));
      __m256 flo, fhi;
      if constexpr (sizeof(W) == 4) {
        flo = _mm256_fmadd_ps(load8(wt), load8(xt), lo[r]);
        fhi = _mm256_fmadd_ps(load8(wt + 8), load8(xt + 8), hi[r]);
      } else {
        flo = _mm256_fmadd_ps(load8(wt, bf16), load8(xt), lo[r]);
        fhi = _mm256_fmadd_ps(load8(wt + 8, bf16), load8(xt + 8), hi[r]);
      }
      lo[r] = _mm256_blendv_ps(lo[r], flo, mlo);
      hi[r] = _mm256_blendv_ps(hi[r], fhi, mhi);
    }
  }
  for (size_t r = 0; r < S; ++r) out[r] = reduce16(lo[r], hi[r]);
}

// One row's dot16_rows.
template <typename W>
static inline float dot16(const W* w, const float* x, size_t n, bool bf16 = false) {
  float out;
  dot16_rows<1, false>(&w, x, n, bf16, &out);
  return out;
}

// Canonical 16-lane plain sum (sum_f32_ref).
static inline float sum16(const float* x, size_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  size_t k = 0;
  for (; k + 16 <= n; k += 16) {
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(x + k));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(x + k + 8));
  }
  if (k < n) {
    float xt[16] = {};
    std::memcpy(xt, x + k, (n - k) * sizeof(float));
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(xt));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(xt + 8));
  }
  return reduce16(lo, hi);
}

// Eight int32 block sums, one per lane, from eight vectors of partial int32 sums (exact).
static inline __m256i hsum8x8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// Lane j of a vector set from a scalar (j < 8), without a round trip through memory.
static inline __m128i insert_u16(__m128i v, uint16_t x, size_t j) {
  switch (j) {
    case 0:
      return _mm_insert_epi16(v, x, 0);
    case 1:
      return _mm_insert_epi16(v, x, 1);
    case 2:
      return _mm_insert_epi16(v, x, 2);
    case 3:
      return _mm_insert_epi16(v, x, 3);
    case 4:
      return _mm_insert_epi16(v, x, 4);
    case 5:
      return _mm_insert_epi16(v, x, 5);
    case 6:
      return _mm_insert_epi16(v, x, 6);
    default:
      return _mm_insert_epi16(v, x, 7);
  }
}

// exp_ref (exp-v1), eight lanes, operation for operation.
static inline __m256 exp8(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693145751953125f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // n1 = n / 2 truncated toward zero (C++ integer division), n2 = n - n1. Lanes outside the
  // valid range are replaced below, so their garbage exponents do not matter.
  const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.72283f);
  const __m256i ni = _mm256_cvtps_epi32(
      _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(128.0f)));
  const __m256i n1 = _mm256_srai_epi32(_mm256_add_epi32(ni, _mm256_srli_epi32(ni, 31)), 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// silu_ref and the SwiGLU product, eight lanes.
static inline __m256 swiglu8(__m256 g, __m256 u) {
  const __m256 neg = _mm256_xor_ps(g, _mm256_set1_ps(-0.0f));
  const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(neg)));
  return _mm256_mul_ps(s, u);
}

// gelu_ref (gelu-v1) and the GeGLU product, eight lanes, operation for operation.
static inline __m256 geglu8(__m256 g, __m256 u) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
  const __m256 w = _mm256_add_ps(g, _mm256_mul_ps(_mm256_set1_ps(0.044715f), x3));
  const __m256 t = _mm256_mul_ps(_mm256_set1_ps(1.59576912160573071f), w);
  const __m256 neg = _mm256_xor_ps(t, _mm256_set1_ps(-0.0f));
  const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(neg)));
  return _mm256_mul_ps(s, u);
}

}  // namespace tzero::x86
