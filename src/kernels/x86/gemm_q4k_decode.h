// The Q4_K and Q5_K gemms of small batches (decode: 1 or 2 tokens) for the avx512 set, in dot-v1's
// order (kernels/dot.h): per super-block b the exact int32 sums A (scaled quants) and B (mins),
// then acc[b % 8] = fma(d_w * d_x, float(A), acc[b % 8]) and accm likewise, result tree8(acc) -
// tree8(accm).
//
// How: a zmm holds two sub-blocks (64 quants) against 64 contiguous activation bytes, so a block
// is 4 maddubs/madd pairs with the sub-block scales permuted in; each block's 16 int32 partials
// fold with the 7 other blocks' of its group of 8 into one ymm of 8 exact A values, lane = b % 8,
// and the fma runs on the 8 block lanes at once (masked on a short last group, so a lane past the
// end keeps its value, -0 included). Weights are unpacked once per block for every token.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/x86/kernels_impl.h"

namespace tzero::x86 {
namespace {

// The 8 ints of v0..v7 (8 int32 lanes each) summed: lane i = sum of v_i's lanes.
inline __m256i sum8x8_epi32(const __m256i* v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  // a = [s0 s1 s2 s3 | s0' s1' s2' s3'] (the two 128-bit halves' partial sums), b for 4..7.
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// The 64 quants of chunk c (sub-blocks 2c, 2c+1) of a block as bytes: Q4_K 0..15, Q5_K 0..31.
// The 32 bytes are loaded into both halves (a broadcast is a load, no shuffle) and the high
// half shifted by 4 per lane, where a shift and an insert (a shuffle-port instruction) per
// chunk were: one-core ceiling (tz_bench_decode --threads 1 --kib 1536, 7 alternated pairs on
// the Intel VM) Q4_K 11.5-11.6 -> 12.5-12.6 GB/s, Q5_K 10.5-10.6 -> 10.8-11.1.
inline __m512i nibble_halves(const uint8_t* qs32, __m512i nib) {
  const __m512i q =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs32)));
  const __m512i four = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  return _mm512_and_si512(_mm512_srlv_epi16(q, four), nib);
}
inline __m512i k_chunk_quants(const BlockQ4_K& b, int c, __m512i nib) {
  return nibble_halves(b.qs + 32 * c, nib);
}
// Q5_K: the nibbles, plus bits 2c and 2c+1 of qh[l] as bit 4 of the low and high halves' bytes.
inline __m512i k_chunk_quants(const BlockQ5_K& b, int c, __m512i nib) {
  const __m512i qh =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh)));
  const __m512i hshift = _mm512_inserti64x4(_mm512_set1_epi16(int16_t(2 * c)),
                                            _mm256_set1_epi16(int16_t(2 * c + 1)), 1);
  const __m512i h = _mm512_and_si512(_mm512_srlv_epi16(qh, hshift), _mm512_set1_epi8(1));
  return _mm512_or_si512(nibble_halves(b.qs + 32 * c, nib), _mm512_slli_epi16(h, 4));
}

template <typename Block, int NT>
void k4_rows_decode(const uint8_t* w, size_t w_row_bytes, const ActQ8K* xq, size_t nb,
                    size_t n_rows, float* y, size_t ldy) {
  const __m512i nib = _mm512_set1_epi8(15);
  // vpermw indices: chunk c takes scale 2c for its low 16 int16 lanes, 2c+1 for the high 16.
  __m512i sc_idx[4];
  for (int c = 0; c < 4; ++c)
    sc_idx[c] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(int16_t(2 * c))),
                                   _mm256_set1_epi16(int16_t(2 * c + 1)), 1);
  for (size_t r = 0; r < n_rows; ++r) {
    const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    __m256 acc[NT], accm[NT];
    for (int t = 0; t < NT; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
    for (size_t b0 = 0; b0 < nb; b0 += 8) {
      const size_t ng = nb - b0 < 8 ? nb - b0 : 8;
      prefetch_ahead<8 * sizeof(Block)>(wr + b0);
      __m256i va[NT][8], vb[NT][8];
      alignas(16) uint16_t dw[8] = {}, dmw[8] = {};
      for (size_t i = 0; i < 8; ++i) {
        if (i >= ng) {
          for (int t = 0; t < NT; ++t) va[t][i] = vb[t][i] = _mm256_setzero_si256();
          continue;
        }
        const Block& wb = wr[b0 + i];
        dw[i] = wb.d;
        dmw[i] = wb.dmin;
        uint32_t s[3];
        std::memcpy(s, wb.scales, 12);
        const uint32_t sc_lo = s[0] & 0x3f3f3f3fu, m_lo = s[1] & 0x3f3f3f3fu;
        const uint32_t sc_hi = (s[2] & 0x0f0f0f0fu) | (((s[0] >> 6) & 0x03030303u) << 4);
        const uint32_t m_hi = ((s[2] >> 4) & 0x0f0f0f0fu) | (((s[1] >> 6) & 0x03030303u) << 4);
        const __m128i sc16 =
            _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(uint64_t(sc_lo) | uint64_t(sc_hi) << 32)));
        // The mins twice each (m0 m0 m1 m1 ... m7 m7) as int16: VPMADDWD against the 16 bsums
        // gives m[j] * (bsums[2j] + bsums[2j+1]) on 8 lanes, where a VPHADDW of the bsums per
        // token was (Zen 5 VM, tz_bench_decode --threads 1 --kib 1536, 3 alternated pairs:
        // Q4_K 28.0-28.3 -> 28.1-28.3 GB/s, Q5_K 27.2-27.4 -> 28.1-28.4).
        const __m128i m8 = _mm_cvtsi64_si128(int64_t(uint64_t(m_lo) | uint64_t(m_hi) << 32));
        const __m256i m16x2 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const __m512i scz = _mm512_castsi128_si512(sc16);
        __m512i q[4], sc[4];
        for (int c = 0; c < 4; ++c) {
          q[c] = k_chunk_quants(wb, c, nib);
          sc[c] = _mm512_permutexvar_epi16(sc_idx[c], scz);
        }
        for (int t = 0; t < NT; ++t) {
          const ActQ8K& xb = xq[size_t(t) * nb + b0 + i];
          __m512i a = _mm512_setzero_si512();
          for (int c = 0; c < 4; ++c) {
            // Pair sums of u5 * s8 fit int16 (<= 2 * 31 * 127); times the 6-bit scale fit int32.
            const __m512i xv = _mm512_loadu_si512(xb.qs + 64 * c);
            a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(q[c], xv), sc[c]));
          }
          va[t][i] = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
          // B = sum of m[j] * (bsums[2j] + bsums[2j+1]), exact: the products fit int32 (<= 63
          // * 16 * 128), and so do their sums.
          vb[t][i] = _mm256_madd_epi16(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums)), m16x2);
        }
      }
      const __mmask8 live = __mmask8((1u << ng) - 1);
      const __m256 dwv = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw)));
      const __m256 dmwv = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dmw)));
      for (int t = 0; t < NT; ++t) {
        alignas(32) float dx[8] = {};
        for (size_t i = 0; i < ng; ++i) dx[i] = xq[size_t(t) * nb + b0 + i].d;
        const __m256 dxv = _mm256_load_ps(dx);
        const __m256 fa = _mm256_cvtepi32_ps(sum8x8_epi32(va[t]));
        const __m256 fb = _mm256_cvtepi32_ps(sum8x8_epi32(vb[t]));
        acc[t] = _mm256_mask3_fmadd_ps(_mm256_mul_ps(dwv, dxv), fa, acc[t], live);
        accm[t] = _mm256_mask3_fmadd_ps(_mm256_mul_ps(dmwv, dxv), fb, accm[t], live);
      }
    }
    for (int t = 0; t < NT; ++t) {
      alignas(32) float a[8], m[8];
      _mm256_store_ps(a, acc[t]);
      _mm256_store_ps(m, accm[t]);
      const float s = reduce8_scalar(a);
      y[size_t(t) * ldy + r] = s - reduce8_scalar(m);
    }
  }
}

// y[t * ldy + r] for any n_tok, two tokens at a time; Block is BlockQ4_K or BlockQ5_K.
template <typename Block>
void gemm_k4_decode_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                           size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  size_t t = 0;
  for (; t + 2 <= n_tok; t += 2)
    k4_rows_decode<Block, 2>(w, w_row_bytes, xq + t * nb, nb, n_rows, y + t * ldy, ldy);
  if (t < n_tok)
    k4_rows_decode<Block, 1>(w, w_row_bytes, xq + t * nb, nb, n_rows, y + t * ldy, ldy);
}

}  // namespace
}  // namespace tzero::x86
