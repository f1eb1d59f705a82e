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

// A Q6_K block unpacked once for every token: the 64 quants (0..63) of elements 64u..64u+63 in
// q[u], the scales of their sub-blocks 4u..4u+3 on 8 int16 lanes each in sc[u], and the 16 scales
// as int16 (for the bsums correction).
struct Q6KDecodeBlock {
  __m512i q[4], sc[4];
  __m256i sc16;
};

inline void q6k_decode_unpack(const BlockQ6_K& w, const __m512i* sc_idx, Q6KDecodeBlock* o) {
  const __m512i nib = _mm512_set1_epi8(15), three = _mm512_set1_epi8(3);
  const __m256i s16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
  const __m512i sc16 = _mm512_castsi256_si512(s16);
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
    // Bits 0-1 of qh for elements 0-31, bits 2-3 for 32-63; then bits 4-5 and 6-7 for 64-127.
    const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
    o->q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, nib),
                                  _mm512_slli_epi16(_mm512_and_si512(hb, three), 4));
    o->q[2 * h + 1] =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib),
                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), three), 4));
    o->sc[2 * h] = _mm512_permutexvar_epi16(sc_idx[2 * h], sc16);
    o->sc[2 * h + 1] = _mm512_permutexvar_epi16(sc_idx[2 * h + 1], sc16);
  }
  o->sc16 = s16;
}

// The 8 int32 partials of one unpacked block against one ActQ8K block; their sum is A exactly:
// u6 x s8 pairs fit int16 (<= 2 * 63 * 127), times the int8 scale int32; minus 32 * sum of
// scales[i] * bsums[i] (bsums <= 16 * 127 fit int16, the products int32).
inline __m256i q6k_block_partials(const Q6KDecodeBlock& u, const ActQ8K& x) {
  __m512i a = _mm512_setzero_si512();
  for (int k = 0; k < 4; ++k)
    a = _mm512_add_epi32(
        a, _mm512_madd_epi16(_mm512_maddubs_epi16(u.q[k], _mm512_loadu_si512(x.qs + 64 * k)),
                             u.sc[k]));
  const __m256i corr =
      _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), u.sc16);
  return _mm256_sub_epi32(
      _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1)),
      _mm256_slli_epi32(corr, 5));
}

// NT tokens (1 to 4) at once: each block unpacked once; each (row, token) keeps its own lanes.
template <int NT>
void q6k_rows_decode(const uint8_t* w, size_t w_row_bytes, const ActQ8K* xq, size_t nb,
                     size_t n_rows, float* y, size_t ldy) {
  // vpermw indices: zmm u (0..3) covers sub-blocks 4u..4u+3, 8 int16 lanes each.
  __m512i sc_idx[4];
  for (int u = 0; u < 4; ++u) {
    alignas(64) int16_t idx[32];
    for (int l = 0; l < 32; ++l) idx[l] = int16_t(4 * u + l / 8);
    sc_idx[u] = _mm512_load_si512(idx);
  }
  Q6KDecodeBlock u;
  for (size_t r = 0; r < n_rows; ++r) {
    const BlockQ6_K* wr = reinterpret_cast<const BlockQ6_K*>(w + r * w_row_bytes);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    for (size_t b0 = 0; b0 < nb; b0 += 8) {
      const size_t ng = nb - b0 < 8 ? nb - b0 : 8;
      prefetch_ahead<8 * sizeof(BlockQ6_K)>(wr + b0);
      __m256i va[NT][8];
      alignas(16) uint16_t dw[8] = {};
      for (size_t i = 0; i < 8; ++i) {
        if (i >= ng) {
          for (int t = 0; t < NT; ++t) va[t][i] = _mm256_setzero_si256();
          continue;
        }
        q6k_decode_unpack(wr[b0 + i], sc_idx, &u);
        dw[i] = wr[b0 + i].d;
        for (int t = 0; t < NT; ++t) va[t][i] = q6k_block_partials(u, xq[size_t(t) * nb + b0 + i]);
      }
      const __mmask8 live = __mmask8((1u << ng) - 1);
      const __m256 dwv = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw)));
      for (int t = 0; t < NT; ++t) {
        alignas(32) float dx[8] = {};
        for (size_t i = 0; i < ng; ++i) dx[i] = xq[size_t(t) * nb + b0 + i].d;
        acc[t] = _mm256_mask3_fmadd_ps(_mm256_mul_ps(dwv, _mm256_load_ps(dx)),
                                       _mm256_cvtepi32_ps(sum8x8_epi32(va[t])), acc[t], live);
      }
    }
    for (int t = 0; t < NT; ++t) {
      alignas(32) float a[8];
      _mm256_store_ps(a, acc[t]);
      y[size_t(t) * ldy + r] = reduce8_scalar(a);
    }
  }
}

// y[t * ldy + r] for n_tok tokens, up to four at a time.
inline void gemm_q6_k_decode_avx512(const uint8_t* w, size_t w_row_bytes, const void* x,
                                    size_t n_cols, size_t n_rows, size_t n_tok, float* y,
                                    size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  for_token_chunks(n_tok, [&](auto nt, size_t t) {
    q6k_rows_decode<decltype(nt)::value>(w, w_row_bytes, xq + t * nb, nb, n_rows, y + t * ldy, ldy);
  });
}

}  // namespace
}  // namespace tzero::x86
