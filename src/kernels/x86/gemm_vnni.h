// Batched (prefill) quantized gemms for AVX-512 VNNI: register tiles of R weight rows x T tokens
// over repacked operands. Included only by avx512.cpp (it needs -mavx512vl -mavx512vnni).
//
// Layout trick: the canonical order (dot.h, dot-v1) keeps 8 float lanes, lane l taking the blocks
// b with b % 8 == l. Both operands are repacked, per group of 8 consecutive blocks, so that dword
// lane i of every vector holds 4 consecutive quants of block 8g + i (an 8x8 dword transpose).
// Then vpdpbusd accumulates the exact int32 block sums of 8 blocks straight into the 8 lanes of
// one register: no horizontal sums, and each (row, token) pair needs one float fma per 8 blocks,
// fma(p, float(isum), acc) lane by lane, in increasing block order, exactly as the reference.
//
// vpdpbusd multiplies unsigned by signed bytes, so weights are made unsigned and the sums are
// corrected with exact integers: Q8_0 uses w + 128 (isum = sum (w + 128) x - 128 sum x) and
// Q4_0 its raw nibbles (w + 8). Q4_K quants are already unsigned (0..15); its sub-block sums are
// scaled by the 6-bit scales with vpmulld every 32 quants, and B (mins times activation sums) is
// a small vpdpwssd product. Q6_K quants are unsigned too (0..63, before the -32): each 16-quant
// sub-block sum starts from -32 times its activation sum and is scaled by its 8-bit scale with
// vpmulld. Groups past the end are zero padded (p = 0, isum = 0, which leaves a lane as the
// reference leaves it: accumulators never hold -0, see kernels_impl.h gemm_q).
//
// Every (row, token) element is computed by one tile in the canonical order, so the result does
// not depend on the tile shapes, the batch or the thread split.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/weight_layout.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

// Q4_K and Q5_K batches below this many tokens use gemm_q4k_decode.h (decode: the repacking does
// not pay for itself; measured with bench/bench_kernels.cpp, matmul2048). The 32-element types
// and Q6_K have their thresholds beside their decode kernels in avx512.cpp.
constexpr size_t kVnniMinTokQ4K = 3;
// Activation bytes repacked per pass: tokens are chunked so they mostly stay in L2 (1 MiB per
// core on Zen 4) while every row tile of the thread streams over them; each chunk repacks the
// weights again, so fewer, larger chunks win (measured: 192 KiB < 384 KiB < 768 KiB < 1 MiB on
// the 2048 x 5632 shape at 128 tokens).
constexpr size_t kVnniActBudget = size_t(1024) << 10;

// In: r[i] = 8 dwords of row i. Out: r[k] = dword k of rows 0..7.
inline void transpose8x8_epi32(__m256i r[8]) {
  const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// ---- Q8_0 / Q4_0 ------------------------------------------------------------------------------

struct QGroupW {  // 8 weight blocks of one row
  __m256i q[8];   // q[k] lane i: unsigned quants 4k..4k+3 of block i
  __m256 d;       // block scales (widened from f16)
};
struct QGroupX {  // 8 activation blocks of one token
  __m256i q[8];   // q[k] lane i: signed quants 4k..4k+3 of block i
  __m256 d;
  __m256i corr;  // -(sum of the block's quants) << shift: the unsigned-weight correction
};

template <int Shift>
void repack_act_q8(const ActQ8* x, size_t nb, QGroupX* out) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (size_t g = 0; g * 8 < nb; ++g) {
    __m256i v[8];
    alignas(32) float d[8];
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      if (b < nb) {
        v[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        d[i] = x[b].d;
      } else {
        v[i] = _mm256_setzero_si256();
        d[i] = 0.0f;
      }
    }
    transpose8x8_epi32(v);
    __m256i sum = _mm256_setzero_si256();
    for (int k = 0; k < 8; ++k) {
      _mm256_store_si256(&out[g].q[k], v[k]);
      sum = _mm256_dpbusd_epi32(sum, ones, v[k]);
    }
    out[g].d = _mm256_load_ps(d);
    out[g].corr = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, Shift));
  }
}

template <typename Block>
void repack_w_q(const Block* w, size_t nb, QGroupW* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    __m256i v[8];
    alignas(16) uint16_t d[8];
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      if (b >= nb) {
        v[i] = _mm256_setzero_si256();
        d[i] = 0;
        continue;
      }
      if constexpr (sizeof(Block) == sizeof(BlockQ4_0)) {  // raw nibbles: w + 8
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
        const __m128i m = _mm_set1_epi8(15);
        v[i] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
      } else {  // w + 128
        v[i] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs)),
                                _mm256_set1_epi8(char(0x80)));
      }
      d[i] = w[b].d;
    }
    transpose8x8_epi32(v);
    for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[k], v[k]);
    out[g].d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
  }
}

// Row r of rows (row_bytes each) in the file's layout: the row itself, or (blocks8) the row
// unpacked from the Blocks8 layout (kernels/weight_layout.h) into buf. For the tiles, which take
// a row's blocks one by one as they repack them.
inline const uint8_t* file_layout_row(TensorType t, bool blocks8, const uint8_t* rows,
                                      size_t row_bytes, size_t r, std::vector<uint8_t>& buf) {
  if (!blocks8) return rows + r * row_bytes;
  buf.resize(row_bytes);
  from_blocks8(t, rows + r * row_bytes, buf.data(), 1, row_bytes);
  return buf.data();
}

// y[t * ldy + r] for R rows and T tokens, over ng groups.
template <int R, int T>
void q_tile(const QGroupW* const* w, const QGroupX* const* x, size_t ng, float* y, size_t ldy) {
  __m256 acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (size_t g = 0; g < ng; ++g) {
    __m256i s[R][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i c = _mm256_load_si256(&x[t][g].corr);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) s[r][t] = c;
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i wv[R], xv[T];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) wv[r] = _mm256_load_si256(&w[r][g].q[k]);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) xv[t] = _mm256_load_si256(&x[t][g].q[k]);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) s[r][t] = _mm256_dpbusd_epi32(s[r][t], wv[r], xv[t]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 dw = w[r][g].d;
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256 p = _mm256_mul_ps(dw, x[t][g].d);
        acc[r][t] = _mm256_fmadd_ps(p, _mm256_cvtepi32_ps(s[r][t]), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = reduce8(acc[r][t]);
}

// ---- Q4_K -------------------------------------------------------------------------------------

struct KGroupW {  // 8 super-blocks of one row
  __m256i q[64];  // q[8j + k] lane i: quants 4k..4k+3 of sub-block j of super-block i
  __m256i sc[8];  // sc[j] lane i: scale of sub-block j of super-block i (int32)
  __m256i m[4];   // m[p] lane i: mins of sub-blocks 2p, 2p+1 (int16 pair)
  __m256 d, dmin;
};
struct KGroupX {  // 8 activation super-blocks of one token
  __m256i q[64];
  __m256i bs[4];  // bs[p] lane i: sums of sub-blocks 2p, 2p+1 of 32 quants (int16 pair)
  __m256 d;
};

inline void repack_act_q8k(const ActQ8K* x, size_t nb, KGroupX* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    alignas(32) int16_t bs[4][8][2];
    alignas(32) float d[8];
    for (int j = 0; j < 8; ++j) {
      __m256i v[8];
      for (size_t i = 0; i < 8; ++i) {
        const size_t b = g * 8 + i;
        v[i] = b < nb ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * j))
                      : _mm256_setzero_si256();
      }
      transpose8x8_epi32(v);
      for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[8 * j + k], v[k]);
    }
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      d[i] = b < nb ? x[b].d : 0.0f;
      for (int j = 0; j < 8; ++j)  // |sum of 32 quants| <= 4064: fits int16
        bs[j / 2][i][j % 2] =
            b < nb ? int16_t(int32_t(x[b].bsums[2 * j]) + int32_t(x[b].bsums[2 * j + 1])) : 0;
    }
    for (int p = 0; p < 4; ++p)
      out[g].bs[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(bs[p]));
    out[g].d = _mm256_load_ps(d);
  }
}

// In: rows[i] = 8 bytes of row i (blocks 0..7). Out: cols[p] = columns 2p and 2p+1, 8 bytes
// each (byte i = row i), in the low and high halves (an 8x8 byte transpose).
inline void transpose8x8_epi8(const uint64_t* rows, __m128i cols[4]) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_cvtsi64_si128(int64_t(rows[i]));
  const __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpacklo_epi8(r[2], r[3]);
  const __m128i t2 = _mm_unpacklo_epi8(r[4], r[5]), t3 = _mm_unpacklo_epi8(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
  const __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
  cols[0] = _mm_unpacklo_epi32(u0, u2);
  cols[1] = _mm_unpackhi_epi32(u0, u2);
  cols[2] = _mm_unpacklo_epi32(u1, u3);
  cols[3] = _mm_unpackhi_epi32(u1, u3);
}

// The 8 scales and 8 mins of a Q4_K block, one byte each (sub-block j in byte j).
template <typename Block>
inline void q4_k_scales_mins(const Block& b, uint64_t* sc, uint64_t* m) {
  uint32_t s[3];
  std::memcpy(s, b.scales, 12);
  const uint32_t sc_lo = s[0] & 0x3f3f3f3fu, m_lo = s[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (s[2] & 0x0f0f0f0fu) | (((s[0] >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((s[2] >> 4) & 0x0f0f0f0fu) | (((s[1] >> 6) & 0x03030303u) << 4);
  *sc = uint64_t(sc_lo) | uint64_t(sc_hi) << 32;
  *m = uint64_t(m_lo) | uint64_t(m_hi) << 32;
}

// Scales and mins are transposed in registers (no narrow stores read back as one vector, which
// stalls store forwarding); the quants one 32-byte chunk (two sub-blocks) at a time.
// Chunk c's 32 low-nibble quants (sub-block 2c) and 32 high-nibble ones (2c+1) as bytes.
inline void k_chunk_quants256(const BlockQ4_K& b, int c, __m256i* lo, __m256i* hi) {
  const __m256i nib = _mm256_set1_epi8(15);
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
  *lo = _mm256_and_si256(q, nib);
  *hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
}
inline void k_chunk_quants256(const BlockQ5_K& b, int c, __m256i* lo, __m256i* hi) {
  const __m256i nib = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
  *lo = _mm256_or_si256(_mm256_and_si256(q, nib),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4));
  *hi = _mm256_or_si256(
      _mm256_and_si256(_mm256_srli_epi16(q, 4), nib),
      _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4));
}

// Q4_K or Q5_K rows (their quants 0..15 or 0..31 unsigned either way) into the same groups.
template <typename Block>
inline void repack_w_k4(const Block* w, size_t nb, KGroupW* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    const size_t n = nb - g * 8 < 8 ? nb - g * 8 : 8;  // blocks of this group; the rest are 0
    const Block* wb = w + g * 8;
    uint64_t scs[8] = {}, ms[8] = {};
    uint16_t d[8] = {}, dm[8] = {};
    for (size_t i = 0; i < n; ++i) {
      q4_k_scales_mins(wb[i], &scs[i], &ms[i]);
      d[i] = wb[i].d;
      dm[i] = wb[i].dmin;
    }
    __m128i sc_cols[4], m_cols[4];
    transpose8x8_epi8(scs, sc_cols);
    transpose8x8_epi8(ms, m_cols);
    for (int p = 0; p < 4; ++p) {
      out[g].sc[2 * p] = _mm256_cvtepu8_epi32(sc_cols[p]);
      out[g].sc[2 * p + 1] = _mm256_cvtepu8_epi32(_mm_srli_si128(sc_cols[p], 8));
      // Lane i: the int16 pair (m[2p], m[2p+1]) of block i.
      out[g].m[p] =
          _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m_cols[p], _mm_srli_si128(m_cols[p], 8)));
    }
    out[g].d = _mm256_cvtph_ps(_mm_setr_epi16(short(d[0]), short(d[1]), short(d[2]), short(d[3]),
                                              short(d[4]), short(d[5]), short(d[6]), short(d[7])));
    out[g].dmin =
        _mm256_cvtph_ps(_mm_setr_epi16(short(dm[0]), short(dm[1]), short(dm[2]), short(dm[3]),
                                       short(dm[4]), short(dm[5]), short(dm[6]), short(dm[7])));
    for (int c = 0; c < 4; ++c) {
      __m256i lo[8], hi[8];
      for (size_t i = 0; i < 8; ++i) {
        if (i >= n) {
          lo[i] = hi[i] = _mm256_setzero_si256();
          continue;
        }
        k_chunk_quants256(wb[i], c, &lo[i], &hi[i]);
      }
      transpose8x8_epi32(lo);
      transpose8x8_epi32(hi);
      for (int k = 0; k < 8; ++k) {
        _mm256_store_si256(&out[g].q[8 * (2 * c) + k], lo[k]);
        _mm256_store_si256(&out[g].q[8 * (2 * c + 1) + k], hi[k]);
      }
    }
  }
}

template <int R, int T>
void q4_k_tile(const KGroupW* const* w, const KGroupX* const* x, size_t ng, float* y, size_t ldy) {
  __m256 acc[R][T], accm[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = accm[r][t] = _mm256_setzero_ps();
  for (size_t g = 0; g < ng; ++g) {
    __m256i a[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) a[r][t] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      __m256i s[R][T];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) s[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        __m256i wv[R], xv[T];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) wv[r] = _mm256_load_si256(&w[r][g].q[8 * j + k]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_load_si256(&x[t][g].q[8 * j + k]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) s[r][t] = _mm256_dpbusd_epi32(s[r][t], wv[r], xv[t]);
      }
      // Sub-block sums (<= 32 * 15 * 127) times 6-bit scales, summed over j: exact int32.
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256i sc = _mm256_load_si256(&w[r][g].sc[j]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t)
          a[r][t] = _mm256_add_epi32(a[r][t], _mm256_mullo_epi32(s[r][t], sc));
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        __m256i b = _mm256_setzero_si256();
        for (int p = 0; p < 4; ++p) b = _mm256_dpwssd_epi32(b, w[r][g].m[p], x[t][g].bs[p]);
        const __m256 xd = x[t][g].d;
        acc[r][t] =
            _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].d, xd), _mm256_cvtepi32_ps(a[r][t]), acc[r][t]);
        accm[r][t] =
            _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].dmin, xd), _mm256_cvtepi32_ps(b), accm[r][t]);
      }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const float s = reduce8(acc[r][t]);
      y[size_t(t) * ldy + size_t(r)] = s - reduce8(accm[r][t]);
    }
}

// ---- Q6_K -------------------------------------------------------------------------------------
// Quants 0..63 (before the -32) are unsigned for vpdpbusd; each 16-quant sub-block sum starts
// from -32 * (its activation sum), so it is exactly sum (q - 32) x before the 8-bit scale.
// Chunk c (32 quants) holds sub-blocks 2c and 2c + 1: q[8c + k] with k < 4 and k >= 4.

struct K6GroupW {  // 8 super-blocks of one row
  __m256i q[64];   // q[8c + k] lane i: quants 4k..4k+3 of chunk c of super-block i (0..63)
  __m256i sc[16];  // sc[j] lane i: scale of sub-block j of super-block i (int32)
  __m256 d;
};
struct K6GroupX {  // 8 activation super-blocks of one token
  __m256i q[64];
  __m256i corr[16];  // corr[j] lane i: -32 * (sum of the 16 quants of sub-block j of block i)
  __m256 d;
};

inline void repack_act_q8k6(const ActQ8K* x, size_t nb, K6GroupX* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    alignas(32) int32_t corr[16][8];
    alignas(32) float d[8];
    for (int c = 0; c < 8; ++c) {
      __m256i v[8];
      for (size_t i = 0; i < 8; ++i) {
        const size_t b = g * 8 + i;
        v[i] = b < nb ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * c))
                      : _mm256_setzero_si256();
      }
      transpose8x8_epi32(v);
      for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[8 * c + k], v[k]);
    }
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      d[i] = b < nb ? x[b].d : 0.0f;
      for (int j = 0; j < 16; ++j) corr[j][i] = b < nb ? -32 * int32_t(x[b].bsums[j]) : 0;
    }
    for (int j = 0; j < 16; ++j)
      out[g].corr[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(corr[j]));
    out[g].d = _mm256_load_ps(d);
  }
}

inline void repack_w_q6_k(const BlockQ6_K* w, size_t nb, K6GroupW* out) {
  const __m256i nib = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
  for (size_t g = 0; g * 8 < nb; ++g) {
    __m256i chunk[8][8];  // [c][i]
    alignas(32) int32_t sc[16][8];
    alignas(16) uint16_t d[8];
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      if (b >= nb) {
        for (int c = 0; c < 8; ++c) chunk[c][i] = _mm256_setzero_si256();
        for (int j = 0; j < 16; ++j) sc[j][i] = 0;
        d[i] = 0;
        continue;
      }
      const BlockQ6_K& wb = w[b];
      for (int h = 0; h < 2; ++h) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh + 32 * h));
        const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h));
        const __m256i ql1 =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.ql + 64 * h + 32));
        for (int gg = 0; gg < 4; ++gg) {
          const __m256i ql = gg & 1 ? ql1 : ql0;
          const __m256i low4 =
              gg < 2 ? _mm256_and_si256(ql, nib) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), nib);
          const __m256i high2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * gg), two);
          chunk[4 * h + gg][i] = _mm256_or_si256(low4, _mm256_slli_epi16(high2, 4));
        }
      }
      for (int j = 0; j < 16; ++j) sc[j][i] = int32_t(wb.scales[j]);
      d[i] = wb.d;
    }
    for (int c = 0; c < 8; ++c) {
      transpose8x8_epi32(chunk[c]);
      for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[8 * c + k], chunk[c][k]);
    }
    for (int j = 0; j < 16; ++j)
      out[g].sc[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc[j]));
    out[g].d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
  }
}

template <int R, int T>
void q6_k_tile(const K6GroupW* const* w, const K6GroupX* const* x, size_t ng, float* y,
               size_t ldy) {
  __m256 acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (size_t g = 0; g < ng; ++g) {
    __m256i a[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) a[r][t] = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j) {
      __m256i s[R][T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i c = _mm256_load_si256(&x[t][g].corr[j]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) s[r][t] = c;
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        __m256i wv[R], xv[T];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) wv[r] = _mm256_load_si256(&w[r][g].q[4 * j + k]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_load_si256(&x[t][g].q[4 * j + k]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) s[r][t] = _mm256_dpbusd_epi32(s[r][t], wv[r], xv[t]);
      }
      // Sub-block sums (|.| <= 16 * 32 * 127) times 8-bit scales, summed over j: exact int32.
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256i sc = _mm256_load_si256(&w[r][g].sc[j]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t)
          a[r][t] = _mm256_add_epi32(a[r][t], _mm256_mullo_epi32(s[r][t], sc));
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].d, x[t][g].d),
                                    _mm256_cvtepi32_ps(a[r][t]), acc[r][t]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = reduce8(acc[r][t]);
}

// ---- drivers ----------------------------------------------------------------------------------

template <typename GW, typename GX>
using TileFn = void (*)(const GW* const*, const GX* const*, size_t, float*, size_t);

template <typename GW, typename GX, int R, int T, template <int, int> class Tile>
struct TileTable {
  TileFn<GW, GX> fn[R][T];
  constexpr TileTable() : fn() { fill<1, 1>(); }
  template <int r, int t>
  constexpr void fill() {
    fn[r - 1][t - 1] = &Tile<r, t>::run;
    if constexpr (t < T)
      fill<r, t + 1>();
    else if constexpr (r < R)
      fill<r + 1, 1>();
  }
};

template <int R, int T>
struct QTile {
  static void run(const QGroupW* const* w, const QGroupX* const* x, size_t ng, float* y,
                  size_t ldy) {
    q_tile<R, T>(w, x, ng, y, ldy);
  }
};
template <int R, int T>
struct Q6KTile {
  static void run(const K6GroupW* const* w, const K6GroupX* const* x, size_t ng, float* y,
                  size_t ldy) {
    q6_k_tile<R, T>(w, x, ng, y, ldy);
  }
};
template <int R, int T>
struct Q4KTile {
  static void run(const KGroupW* const* w, const KGroupX* const* x, size_t ng, float* y,
                  size_t ldy) {
    q4_k_tile<R, T>(w, x, ng, y, ldy);
  }
};

// The shared loop: tokens in chunks that fit the activation budget (repacked once per chunk),
// rows in tiles of R (repacked once per chunk), tokens of a chunk in tiles of T.
template <int R, int T, template <int, int> class Tile, typename GW, typename GX, typename RepackW,
          typename RepackX>
void gemm_tiled(const uint8_t* w, size_t w_row_bytes, size_t ng, size_t n_rows, size_t n_tok,
                float* y, size_t ldy, RepackW repack_w, RepackX repack_x) {
  static constexpr TileTable<GW, GX, R, T, Tile> table;
  thread_local std::vector<GX> xs;
  thread_local std::vector<GW> ws;
  size_t tc = kVnniActBudget / (ng * sizeof(GX));
  tc = tc < T ? T : tc / T * T;
  if (tc > n_tok) tc = n_tok;
  if (xs.size() < tc * ng) xs.resize(tc * ng);
  if (ws.size() < R * ng) ws.resize(R * ng);
  for (size_t t0 = 0; t0 < n_tok; t0 += tc) {
    const size_t nt = n_tok - t0 < tc ? n_tok - t0 : tc;
    for (size_t t = 0; t < nt; ++t) repack_x(t0 + t, xs.data() + t * ng);
    for (size_t r0 = 0; r0 < n_rows; r0 += R) {
      const size_t nr = n_rows - r0 < R ? n_rows - r0 : R;
      const GW* wp[R];
      for (size_t r = 0; r < nr; ++r) {
        repack_w(r0 + r, ws.data() + r * ng);
        wp[r] = ws.data() + r * ng;
      }
      // The next tile's weight rows come from memory while this one computes (the repack
      // would otherwise wait for them with the tile units idle: at 16 tokens, a third of the
      // time).
      if (r0 + R < n_rows) {
        const size_t r1 = r0 + 2 * R < n_rows ? r0 + 2 * R : n_rows;
        for (const uint8_t* p = w + (r0 + R) * w_row_bytes; p < w + r1 * w_row_bytes; p += 64)
          _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
      }
      for (size_t tt = 0; tt < nt; tt += T) {
        const size_t ntt = nt - tt < T ? nt - tt : T;
        const GX* xp[T];
        for (size_t t = 0; t < ntt; ++t) xp[t] = xs.data() + (tt + t) * ng;
        table.fn[nr - 1][ntt - 1](wp, xp, ng, y + (t0 + tt) * ldy + r0, ldy);
      }
    }
  }
}

// B8: the rows in the Blocks8 layout (kernels/weight_layout.h), unpacked a row at a time as the
// tiles repack them.
template <typename Block, bool B8 = false, int R = 4, int T = 3>
void gemm_q_vnni(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                 size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kQBlock, ng = (nb + 7) / 8;
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  constexpr bool kQ4 = sizeof(Block) == sizeof(BlockQ4_0);
  constexpr int kShift = kQ4 ? 3 : 7;
  thread_local std::vector<uint8_t> row;
  gemm_tiled<R, T, QTile, QGroupW, QGroupX>(
      w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
      [&](size_t r, QGroupW* out) {
        repack_w_q(reinterpret_cast<const Block*>(file_layout_row(
                       kQ4 ? TensorType::Q4_0 : TensorType::Q8_0, B8, w, w_row_bytes, r, row)),
                   nb, out);
      },
      [&](size_t t, QGroupX* out) { repack_act_q8<kShift>(xq + t * nb, nb, out); });
}

template <typename Block = BlockQ4_K, int R = 3, int T = 3>
void gemm_q4_k_vnni(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                    size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock, ng = (nb + 7) / 8;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  gemm_tiled<R, T, Q4KTile, KGroupW, KGroupX>(
      w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
      [&](size_t r, KGroupW* out) {
        repack_w_k4(reinterpret_cast<const Block*>(w + r * w_row_bytes), nb, out);
      },
      [&](size_t t, KGroupX* out) { repack_act_q8k(xq + t * nb, nb, out); });
}

// 4 x 3 tiles: measured faster than 3 x 3 (5-10% on the TinyLlama shapes at 128 tokens), 3 x 4,
// 4 x 2, 2 x 4 and 2 x 2. row(r): row r's blocks in the file's layout (Rows16 rows:
// gemm_rows16.h unpacks their panels).
template <int R = 4, int T = 3, typename RowFn>
void gemm_q6_k_vnni_rows(RowFn&& row, const uint8_t* w, size_t w_row_bytes, const void* x,
                         size_t n_cols, size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock, ng = (nb + 7) / 8;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  gemm_tiled<R, T, Q6KTile, K6GroupW, K6GroupX>(
      w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
      [&](size_t r, K6GroupW* out) { repack_w_q6_k(row(r), nb, out); },
      [&](size_t t, K6GroupX* out) { repack_act_q8k6(xq + t * nb, nb, out); });
}

inline void gemm_q6_k_vnni(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                           size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  gemm_q6_k_vnni_rows(
      [&](size_t r) { return reinterpret_cast<const BlockQ6_K*>(w + r * w_row_bytes); }, w,
      w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

}  // namespace
}  // namespace tzero::x86
