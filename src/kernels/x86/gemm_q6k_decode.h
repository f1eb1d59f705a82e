// The Q6_K gemm of a single token (decode) for the avx512 set, in dot-v1's order (kernels/dot.h):
// per super-block b the exact int32 A[b] = sum over sub-blocks i of scales[i] * (sum of
// (q - 32) * x_q), then acc[b % 8] = fma(d_w * d_x, float(A[b]), acc[b % 8]), result tree8(acc).
//
// How: a zmm holds 64 consecutive quants: the 64 bytes ql[64h..64h+63] give elements
// 128h + 0..63 (low nibbles) and 128h + 64..127 (high nibbles), in order; the two high bits
// come from qh[32h..32h+31] shifted by 0, 2 (first zmm) or 4, 6 (second). u6 x s8 pairs
// (VPMADDUBSW) times the sub-block scales (VPMADDWD, scales permuted into place) give int32
// partials; A = their sum - 32 * sum(scales[i] * bsums[i]) (q - 32 without a signed unpack).
// Each block's 8 partials fold with the 7 other blocks' of its group into one ymm of 8 exact A
// values (lane = b % 8), and the fma runs on the 8 block lanes at once (masked on a short last
// group).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/quant_k.h"
#include "kernels/x86/gemm_q4k_decode.h"
#include "kernels/x86/kernels_impl.h"

namespace tzero::x86 {
namespace {

// The 8 int32 partials of one Q6_K block against one ActQ8K block; their sum is A exactly.
inline __m256i q6k_block_partials(const BlockQ6_K& w, const ActQ8K& x, const __m512i* sc_idx) {
  const __m512i nib = _mm512_set1_epi8(15), three = _mm512_set1_epi8(3);
  const __m512i sc16 = _mm512_castsi256_si512(
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales))));
  __m512i a = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
    // Bits 0-1 of qh for elements 0-31, bits 2-3 for 32-63; then bits 4-5 and 6-7 for 64-127.
    const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
    const __m512i q0 = _mm512_or_si512(_mm512_and_si512(ql, nib),
                                       _mm512_slli_epi16(_mm512_and_si512(hb, three), 4));
    const __m512i q1 =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib),
                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), three), 4));
    const __m512i x0 = _mm512_loadu_si512(x.qs + 128 * h);
    const __m512i x1 = _mm512_loadu_si512(x.qs + 128 * h + 64);
    // Sub-blocks 8h + 0..3 (q0) and 8h + 4..7 (q1): scale k repeated on 8 int16 lanes.
    a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(q0, x0),
                                              _mm512_permutexvar_epi16(sc_idx[2 * h], sc16)));
    a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(q1, x1),
                                              _mm512_permutexvar_epi16(sc_idx[2 * h + 1], sc16)));
  }
  // 32 * sum of scales[i] * bsums[i]: bsums fit int16 (<= 16 * 127), the products int32.
  const __m256i corr = _mm256_madd_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), _mm512_castsi512_si256(sc16));
  return _mm256_sub_epi32(
      _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1)),
      _mm256_slli_epi32(corr, 5));
}

inline void gemm_q6_k_decode_avx512(const uint8_t* w, size_t w_row_bytes, const void* x,
                                    size_t n_cols, size_t n_rows, float* y) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  // vpermw indices: zmm u (0..3) covers sub-blocks 4u..4u+3, 8 int16 lanes each.
  __m512i sc_idx[4];
  for (int u = 0; u < 4; ++u) {
    alignas(64) int16_t idx[32];
    for (int l = 0; l < 32; ++l) idx[l] = int16_t(4 * u + l / 8);
    sc_idx[u] = _mm512_load_si512(idx);
  }
  for (size_t r = 0; r < n_rows; ++r) {
    const BlockQ6_K* wr = reinterpret_cast<const BlockQ6_K*>(w + r * w_row_bytes);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b0 = 0; b0 < nb; b0 += 8) {
      const size_t ng = nb - b0 < 8 ? nb - b0 : 8;
      __m256i va[8];
      alignas(16) uint16_t dw[8] = {};
      alignas(32) float dx[8] = {};
      for (size_t i = 0; i < 8; ++i) {
        if (i >= ng) {
          va[i] = _mm256_setzero_si256();
          continue;
        }
        va[i] = q6k_block_partials(wr[b0 + i], xq[b0 + i], sc_idx);
        dw[i] = wr[b0 + i].d;
        dx[i] = xq[b0 + i].d;
      }
      const __mmask8 live = __mmask8((1u << ng) - 1);
      const __m256 p =
          _mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw))),
                        _mm256_load_ps(dx));
      acc = _mm256_mask3_fmadd_ps(p, _mm256_cvtepi32_ps(sum8x8_epi32(va)), acc, live);
    }
    alignas(32) float a[8];
    _mm256_store_ps(a, acc);
    y[r] = reduce8_scalar(a);
  }
}

}  // namespace
}  // namespace tzero::x86
