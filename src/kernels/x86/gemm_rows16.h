// The K-quant (Q2_K .. Q6_K) and IQ4_XS gemms over rows in the Rows16 layout (kernels/rows16.h),
// any token count, for the avx512 set (and amx, which inherits them): 16 rows per zmm, in dot-v1's
// order (kernels/dot.h), as reduce8_scalar adds lanes (l, l + 4), then (l, l + 2), then (0, 1):
// - Q4_K and Q5_K: per super-block b and row, the exact int32 A = sum_j sc_j * S_j (S_j:
//   sub-block j's sum of q * x_q) and B = sum_j m_j * (bsums[2j] + bsums[2j + 1]); acc[b % 8] =
//   fma(d_w * d_x, float(A), acc[b % 8]) and accm likewise; the result tree8(acc) - tree8(accm).
// - Q6_K: A = sum_i scales_i * (S_i - 32 * bsums_i) over the 16 sub-blocks (q unsigned 0..63);
//   acc[b % 8] = fma(d_w * d_x, float(A), acc[b % 8]); the result tree8(acc).
// - IQ4_XS: Q6_K's order, A = sum_j (ls_j - 32) * S_j over its 8 sub-blocks of table values.
// - Q2_K: Q4_K's order with 16 sub-blocks of 16; Q3_K: Q6_K's order, q = u - 4 (k2_rows16_panel).
// - Q6_K from 32 tokens: the VNNI tiles (gemm_vnni.h) over each panel unpacked by transposes.
//
// How: one zmm of weights is the same 4 quant bytes of 16 rows; each 4 quants of 16 rows take one
// VPDPBUSD against a broadcast 4 bytes of activations (Q4_K's high nibbles kept in place: 16 x the
// value, shifted back once per sub-block, exact). No fold: row r's sums stay in lane r. A block's
// weights are unpacked once per chunk of 8 tokens (IQ4_XS: 16), and prefetched 4 KiB ahead (Q4_K
// from memory at one thread: 22-23 GB/s without, 34-35 with, Zen 5).
#pragma once

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"
#include "kernels/rows16.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/gemm_vnni.h"

namespace tzero::x86 {
namespace {

constexpr size_t kQ6KPanelBlock = 16 * sizeof(BlockQ6_K);

// One token's terms per block, laid out once per call: d_x, and the four int32 words whose
// int16 halves are the pair sums (bsums[4i] + bsums[4i + 1], bsums[4i + 2] + bsums[4i + 3]).
struct Rows16Act {
  float d;
  int32_t bs_pairs[4];
};

// The scales and mins of one block of 16 rows: sc[j] as int32 per row, mp[i] as int16 pairs
// (m_2i, m_2i+1) per row.
struct Rows16Scales {
  __m512i sc[8], mp[4];
};

inline void rows16_scales(const uint8_t* pb, Rows16Scales* o) {
  __m128i s[12];
  for (int k = 0; k < 12; ++k)
    s[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 64 + 16 * k));
  const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m30 = _mm_set1_epi8(0x30);
  // The top two bits of a byte, as bits 4-5 (a 16-bit shift by 2 brings the neighbour's bits
  // only into bits 6-7, masked off).
  auto top2 = [&](__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 2), m30); };
  __m128i sc[8], m[8];
  for (int j = 0; j < 4; ++j) {
    sc[j] = _mm_and_si128(s[j], m63);
    m[j] = _mm_and_si128(s[j + 4], m63);
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = _mm_or_si128(_mm_and_si128(s[j + 4], m15), top2(s[j - 4]));
    m[j] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(s[j + 4], 4), m15), top2(s[j]));
  }
  for (int j = 0; j < 8; ++j) o->sc[j] = _mm512_cvtepu8_epi32(sc[j]);
  for (int i = 0; i < 4; ++i) {
    const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi8(m[2 * i], m[2 * i + 1]),
                                           _mm_unpacklo_epi8(m[2 * i], m[2 * i + 1]));
    o->mp[i] = _mm512_cvtepu8_epi16(pairs);
  }
}

// tree8 of acc[0..7] lane by lane (reduce8_scalar's order).
inline __m512 rows16_tree8(const __m512* a) {
  const __m512 b0 = _mm512_add_ps(a[0], a[4]), b1 = _mm512_add_ps(a[1], a[5]);
  const __m512 b2 = _mm512_add_ps(a[2], a[6]), b3 = _mm512_add_ps(a[3], a[7]);
  return _mm512_add_ps(_mm512_add_ps(b0, b2), _mm512_add_ps(b1, b3));
}

// Shifts every byte's bit `from` to bit 4 and clears the others (16-bit shifts: a neighbour's
// bits never land on bit 4 of this byte).
template <int From>
inline __m512i bit_to_4(__m512i v) {
  const __m512i b4 = _mm512_set1_epi8(0x10);
  if constexpr (From <= 4)
    return _mm512_and_si512(_mm512_slli_epi16(v, 4 - From), b4);
  else
    return _mm512_and_si512(_mm512_srli_epi16(v, From - 4), b4);
}

// One Q4_K or Q5_K panel (16 rows) against NT tokens (acts[t]: nb ActQ8K blocks, terms[t]: nb
// Rows16Act). Q5_K's fifth bits (qh, bits 2c and 2c + 1 of byte l for elements 64c + l and
// 64c + 32 + l) join the nibbles before the products.
template <typename Block, int NT>
void k4_rows16_panel(const uint8_t* panel, size_t nb, const ActQ8K* const* acts,
                     const Rows16Act* const* terms, float* y, size_t ldy) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  constexpr size_t kPanelBlock = 16 * sizeof(Block), kQs = 16 * offsetof(Block, qs);
  __m512 acc[NT][8], accm[NT][8];
  for (int t = 0; t < NT; ++t)
    for (int l = 0; l < 8; ++l) acc[t][l] = accm[t][l] = _mm512_setzero_ps();
  const __m512i lo_mask = _mm512_set1_epi8(0x0f), hi_mask = _mm512_set1_epi8(int8_t(0xf0));
  Rows16Scales u;
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kPanelBlock;
    prefetch_ahead<kPanelBlock>(pb);
    rows16_scales(pb, &u);
    __m512i A[NT], B[NT];
    for (int t = 0; t < NT; ++t) A[t] = B[t] = _mm512_setzero_si512();
    auto chunk = [&](auto cc) {
      constexpr int c = decltype(cc)::value;
      __m512i lo[8], hi[8];
      for (int g = 0; g < 8; ++g) {
        const __m512i w = _mm512_loadu_si512(pb + kQs + 64 * (8 * c + g));
        if constexpr (kQ5) {
          const __m512i h = _mm512_loadu_si512(pb + 16 * offsetof(BlockQ5_K, qh) + 64 * g);
          lo[g] = _mm512_or_si512(_mm512_and_si512(w, lo_mask), bit_to_4<2 * c>(h));
          hi[g] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask),
                                  bit_to_4<2 * c + 1>(h));
        } else {
          lo[g] = _mm512_and_si512(w, lo_mask);
          hi[g] = _mm512_and_si512(w, hi_mask);
        }
      }
      for (int t = 0; t < NT; ++t) {
        const int8_t* xq = acts[t][b].qs + 64 * c;
        __m512i s_lo = _mm512_setzero_si512(), s_hi = _mm512_setzero_si512();
        for (int g = 0; g < 8; ++g) {
          int32_t x_lo, x_hi;
          std::memcpy(&x_lo, xq + 4 * g, 4);
          std::memcpy(&x_hi, xq + 32 + 4 * g, 4);
          s_lo = _mm512_dpbusd_epi32(s_lo, lo[g], _mm512_set1_epi32(x_lo));
          s_hi = _mm512_dpbusd_epi32(s_hi, hi[g], _mm512_set1_epi32(x_hi));
        }
        // |S| <= 32 * 31 * 128 fits int32 with room; Q4_K's high nibbles' sum is 16 S exactly.
        if constexpr (!kQ5) s_hi = _mm512_srai_epi32(s_hi, 4);
        A[t] = _mm512_add_epi32(A[t], _mm512_mullo_epi32(s_lo, u.sc[2 * c]));
        A[t] = _mm512_add_epi32(A[t], _mm512_mullo_epi32(s_hi, u.sc[2 * c + 1]));
      }
    };
    chunk(std::integral_constant<int, 0>{});
    chunk(std::integral_constant<int, 1>{});
    chunk(std::integral_constant<int, 2>{});
    chunk(std::integral_constant<int, 3>{});
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb)));
    const __m512 dmw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32)));
    for (int t = 0; t < NT; ++t) {
      const Rows16Act& tb = terms[t][b];
      for (int i = 0; i < 4; ++i)
        B[t] =
            _mm512_add_epi32(B[t], _mm512_madd_epi16(u.mp[i], _mm512_set1_epi32(tb.bs_pairs[i])));
      const __m512 dx = _mm512_set1_ps(tb.d);
      acc[t][b % 8] =
          _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(A[t]), acc[t][b % 8]);
      accm[t][b % 8] =
          _mm512_fmadd_ps(_mm512_mul_ps(dmw, dx), _mm512_cvtepi32_ps(B[t]), accm[t][b % 8]);
    }
  }
  for (int t = 0; t < NT; ++t)
    _mm512_storeu_ps(y + size_t(t) * ldy,
                     _mm512_sub_ps(rows16_tree8(acc[t]), rows16_tree8(accm[t])));
}

// The Q6_K block of 16 rows at pb: the 16 sub-block scales as int32 per row.
inline void rows16_q6k_scales(const uint8_t* pb, __m512i* sc) {
  for (int i = 0; i < 16; ++i)
    sc[i] =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 3072 + 16 * i)));
}

// One Q6_K panel (16 rows) against NT tokens (acts[t]: nb ActQ8K blocks).
template <int NT>
void q6k_rows16_panel(const uint8_t* panel, size_t nb, const ActQ8K* const* acts, float* y,
                      size_t ldy) {
  __m512 acc[NT][8];
  for (int t = 0; t < NT; ++t)
    for (int l = 0; l < 8; ++l) acc[t][l] = _mm512_setzero_ps();
  const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
  __m512i sc[16];
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kQ6KPanelBlock;
    prefetch_ahead<kQ6KPanelBlock>(pb);
    rows16_q6k_scales(pb, sc);
    __m512i A[NT];
    for (int t = 0; t < NT; ++t) A[t] = _mm512_setzero_si512();
    // Half h, quarter of groups gh: ql bytes 64h + 4g (lo, hi) and 64h + 32 + 4g, qh bytes 32h + 4g
    // (g = 4gh .. 4gh + 3) give elements 128h + 32qq + 4g .. + 3 (qq = 0..3), sub-block
    // 8h + 2qq + gh: one sub-block per qq for these 4 groups.
    for (int h = 0; h < 2; ++h)
      for (int gh = 0; gh < 2; ++gh) {
        __m512i q[4][4];  // [qq][g - 4gh]: 4 u6 quants of 16 rows
        for (int k = 0; k < 4; ++k) {
          const int g = 4 * gh + k;
          const __m512i a = _mm512_loadu_si512(pb + 64 * (16 * h + g));
          const __m512i c = _mm512_loadu_si512(pb + 64 * (16 * h + 8 + g));
          const __m512i hb = _mm512_loadu_si512(pb + 2048 + 64 * (8 * h + g));
          // Bits 2qq, 2qq + 1 of qh as bits 4-5 (16-bit shifts: a neighbour's bits land only
          // outside 0x30).
          q[0][k] = _mm512_or_si512(_mm512_and_si512(a, m0f),
                                    _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
          q[1][k] = _mm512_or_si512(_mm512_and_si512(c, m0f),
                                    _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30));
          q[2][k] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m0f),
                                    _mm512_and_si512(hb, m30));
          q[3][k] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), m0f),
                                    _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30));
        }
        for (int t = 0; t < NT; ++t) {
          const ActQ8K& xb = acts[t][b];
          for (int qq = 0; qq < 4; ++qq) {
            const int8_t* xq = xb.qs + 128 * h + 32 * qq + 16 * gh;
            __m512i s = _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) {
              int32_t x4;
              std::memcpy(&x4, xq + 4 * k, 4);
              s = _mm512_dpbusd_epi32(s, q[qq][k], _mm512_set1_epi32(x4));
            }
            // (S - 32 bsum) * scale, exact: |S| <= 16 * 63 * 128, |32 bsum| <= 32 * 16 * 128.
            const int i = 8 * h + 2 * qq + gh;
            const __m512i centred = _mm512_sub_epi32(s, _mm512_set1_epi32(32 * xb.bsums[i]));
            A[t] = _mm512_add_epi32(A[t], _mm512_mullo_epi32(centred, sc[i]));
          }
        }
      }
    const __m512 dw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 3328)));
    for (int t = 0; t < NT; ++t) {
      const __m512 dx = _mm512_set1_ps(acts[t][b].d);
      acc[t][b % 8] =
          _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(A[t]), acc[t][b % 8]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + size_t(t) * ldy, rows16_tree8(acc[t]));
}

// One IQ4_XS panel (16 rows) against NT tokens (acts[t]: nb ActQ8K blocks): its values from the
// IQ4_NL table plus 128 (unsigned: 1..241), so a sub-block's sum is S + 128 * (its x sum), taken
// back out exactly; A = sum_j (ls_j - 32) * S_j; acc[b % 8] = fma(d_w * d_x, float(A), ..). Up to
// 16 tokens: a block keeps only A[t] live across its sub-blocks, so 16 tokens share each
// unpacking (prefill of 256 tokens, tzero bench -p 256, Zen 5 VM: 251-311 tokens/s against
// 235-274 on the file's layout and the VNNI tiles, where chunks of 8 gave 213-237).
template <int NT>
void iq4xs_rows16_panel(const uint8_t* panel, size_t nb, const ActQ8K* const* acts, float* y,
                        size_t ldy) {
  constexpr size_t kPanelBlock = 16 * sizeof(BlockIQ4_XS);
  __m512 acc[NT][8];
  for (int t = 0; t < NT; ++t)
    for (int l = 0; l < 8; ++l) acc[t][l] = _mm512_setzero_ps();
  alignas(16) int8_t table[16];
  for (int i = 0; i < 16; ++i) table[i] = int8_t(kIQ4NLValues[i] + 128);
  const __m512i lut =
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
  const __m512i m0f = _mm512_set1_epi8(0x0f);
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kPanelBlock;
    prefetch_ahead<kPanelBlock>(pb);
    // The 6-bit scales of 16 rows: scales_l (unit 1 byte, at 16 * 4) and scales_h (unit 2 bytes,
    // at 16 * 2); ls_j = ((scales_l[j / 2] >> 4 (j % 2)) & 15) | ((scales_h >> 2j) & 3) << 4.
    const __m512i sh =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 32)));
    __m512i sc[8];
    for (int j = 0; j < 8; ++j) {
      const __m512i sl = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 64 + 16 * (j / 2))));
      const __m512i lo =
          _mm512_and_si512(_mm512_srli_epi32(sl, 4 * (j % 2)), _mm512_set1_epi32(15));
      const __m512i hi = _mm512_slli_epi32(
          _mm512_and_si512(_mm512_srli_epi32(sh, 2 * j), _mm512_set1_epi32(3)), 4);
      sc[j] = _mm512_sub_epi32(_mm512_or_si512(lo, hi), _mm512_set1_epi32(32));
    }
    __m512i A[NT];
    for (int t = 0; t < NT; ++t) A[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      // Sub-block j: qs bytes 16j + 4k .. + 3 (unit 4j + k, at 16 * 8 + 64 (4j + k)): low nibbles
      // elements 32j + 4k .. + 3, high nibbles 32j + 16 + 4k .. + 3.
      __m512i lo[4], hi[4];
      for (int k = 0; k < 4; ++k) {
        const __m512i w = _mm512_loadu_si512(pb + 128 + 64 * (4 * j + k));
        lo[k] = _mm512_shuffle_epi8(lut, _mm512_and_si512(w, m0f));
        hi[k] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(w, 4), m0f));
      }
      for (int t = 0; t < NT; ++t) {
        const ActQ8K& xb = acts[t][b];
        __m512i s = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
          int32_t x_lo, x_hi;
          std::memcpy(&x_lo, xb.qs + 32 * j + 4 * k, 4);
          std::memcpy(&x_hi, xb.qs + 32 * j + 16 + 4 * k, 4);
          s = _mm512_dpbusd_epi32(s, lo[k], _mm512_set1_epi32(x_lo));
          s = _mm512_dpbusd_epi32(s, hi[k], _mm512_set1_epi32(x_hi));
        }
        // |S + 128 sum x| <= 32 * 241 * 128; the scale is 6 bits less 32: exact in int32.
        const int32_t xsum = int32_t(xb.bsums[2 * j]) + int32_t(xb.bsums[2 * j + 1]);
        const __m512i centred = _mm512_sub_epi32(s, _mm512_set1_epi32(128 * xsum));
        A[t] = _mm512_add_epi32(A[t], _mm512_mullo_epi32(centred, sc[j]));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb)));
    for (int t = 0; t < NT; ++t) {
      const __m512 dx = _mm512_set1_ps(acts[t][b].d);
      acc[t][b % 8] =
          _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(A[t]), acc[t][b % 8]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + size_t(t) * ldy, rows16_tree8(acc[t]));
}

// A token's bsums of a block as int16 pairs, the order of k2_rows16_panel's scale and min pairs:
// bs[2m] = (bsums[4m], bsums[4m + 2]), bs[2m + 1] = (bsums[4m + 1], bsums[4m + 3]).
struct Rows16BsumPairs {
  int32_t bs[8];
};

// One Q2_K or Q3_K panel (16 rows) against NT tokens (acts[t]: nb ActQ8K blocks, pairs[t]: their
// Rows16BsumPairs). Each 16-element sub-block i's exact sum S_i of u * x (u: Q2_K's q, 0..3; Q3_K's
// q + 4 = q2 | hbit << 2, 0..7) takes 4 VPDPBUSD; |S_i| <= 16 * 7 * 128 < 2^15, so one VPDPWSSD
// against (scale_i, 0) int16 pairs adds scale_i * S_i to A exactly. Q2_K: B = sum m_i * bsums_i
// (VPMADDWD of min pairs and bsum pairs), acc and accm as Q4_K's. Q3_K: A - 4 * sum sc_i * bsums_i
// (the same VPMADDWD of scale pairs) is dot-v1's A, acc only. The scales lie in units of 4 bytes
// (rows16.h), so the 16 rows' scales 4m .. 4m + 3 are the bytes of one zmm's dwords.
template <typename Block, int NT>
void k2_rows16_panel(const uint8_t* panel, size_t nb, const ActQ8K* const* acts,
                     const Rows16BsumPairs* const* pairs_x, float* y, size_t ldy) {
  constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  constexpr size_t kPanelBlock = 16 * sizeof(Block), kQs = 16 * offsetof(Block, qs);
  __m512 acc[NT][8], accm[NT][8];
  for (int t = 0; t < NT; ++t)
    for (int l = 0; l < 8; ++l) acc[t][l] = accm[t][l] = _mm512_setzero_ps();
  const __m512i m3 = _mm512_set1_epi8(3), b2 = _mm512_set1_epi8(4);
  const __m512i m0f = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
  constexpr __mmask32 kLow16 = 0x55555555;  // the low int16 of each dword
  // sc[i]: (scale_i, 0) int16 pairs per row; pairs[2m], pairs[2m + 1]: Q2_K's (m_4m, m_4m+2),
  // (m_4m+1, m_4m+3), Q3_K's scales likewise, as int16 pairs per row.
  __m512i sc[16], pairs[8];
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kPanelBlock;
    prefetch_ahead<kPanelBlock>(pb);

    if constexpr (kQ3) {
      // Scales 4m .. 4m + 3 as bytes (6 bits less 32) of each row's dword: low 4 bits from units
      // 0 and 1 (bytes 0..7: scales 0..7 low nibbles, 8..15 high), the top 2 from unit 2's
      // bits 2m, 2m + 1 (16-bit shifts bring a neighbour's bits only outside the masks).
      const uint8_t* ps = pb + 16 * offsetof(BlockQ3_K, scales);
      const __m512i u0 = _mm512_loadu_si512(ps), u1 = _mm512_loadu_si512(ps + 64);
      const __m512i u2 = _mm512_loadu_si512(ps + 128);
      const __m512i lo[4] = {u0, u1, _mm512_srli_epi16(u0, 4), _mm512_srli_epi16(u1, 4)};
      const __m512i hi[4] = {_mm512_slli_epi16(u2, 4), _mm512_slli_epi16(u2, 2), u2,
                             _mm512_srli_epi16(u2, 2)};
      for (int m = 0; m < 4; ++m) {
        const __m512i v = _mm512_sub_epi8(
            _mm512_or_si512(_mm512_and_si512(lo[m], m0f), _mm512_and_si512(hi[m], m30)),
            _mm512_set1_epi8(32));
        // Byte k to bits 8..15, then an arithmetic shift of the low int16 alone.
        sc[4 * m] = _mm512_maskz_srai_epi16(kLow16, _mm512_slli_epi32(v, 8), 8);
        sc[4 * m + 1] = _mm512_maskz_srai_epi16(kLow16, v, 8);
        sc[4 * m + 2] = _mm512_maskz_srai_epi16(kLow16, _mm512_srli_epi32(v, 8), 8);
        sc[4 * m + 3] = _mm512_maskz_srai_epi16(kLow16, _mm512_srli_epi32(v, 16), 8);
        pairs[2 * m] = _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
        pairs[2 * m + 1] = _mm512_srai_epi16(v, 8);
      }
    } else {
      // Byte j of each row's dword m: scales[4m + j] (low nibble the scale, high the min).
      const __m512i lo4 = _mm512_set1_epi32(15), mins = _mm512_set1_epi32(0x000f000f);
      for (int m = 0; m < 4; ++m) {
        const __m512i v = _mm512_loadu_si512(pb + 64 * m);
        for (int k = 0; k < 4; ++k)
          sc[4 * m + k] = _mm512_and_si512(k ? _mm512_srli_epi32(v, 8 * k) : v, lo4);
        pairs[2 * m] = _mm512_and_si512(_mm512_srli_epi32(v, 4), mins);
        pairs[2 * m + 1] = _mm512_and_si512(_mm512_srli_epi32(v, 12), mins);
      }
    }
    __m512i A[NT];
    for (int t = 0; t < NT; ++t) A[t] = _mm512_setzero_si512();
    // Elements 128h + 32g + 16 half + 4k .. + 3: qs unit 8h + 4 half + k shifted by 2g; Q3_K's
    // high bit: bit 4h + g of hmask unit 4 half + k. Sub-block 8h + 2g + half.
    for (int h = 0; h < 2; ++h)
      for (int half = 0; half < 2; ++half) {
        __m512i qs[4], hm[4];
        for (int k = 0; k < 4; ++k) {
          qs[k] = _mm512_loadu_si512(pb + kQs + 64 * (8 * h + 4 * half + k));
          if constexpr (kQ3) hm[k] = _mm512_loadu_si512(pb + 64 * (4 * half + k));
        }
        for (int g = 0; g < 4; ++g) {
          __m512i u[4];
          for (int k = 0; k < 4; ++k) {
            u[k] = _mm512_and_si512(_mm512_srli_epi16(qs[k], 2 * g), m3);
            if constexpr (kQ3) {
              const int bit = 4 * h + g;  // to bit 2 (16-bit shifts: a neighbour's bits miss it)
              const __m512i hb =
                  bit <= 2 ? _mm512_slli_epi16(hm[k], 2 - bit) : _mm512_srli_epi16(hm[k], bit - 2);
              u[k] = _mm512_or_si512(u[k], _mm512_and_si512(hb, b2));
            }
          }
          const int i = 8 * h + 2 * g + half;
          for (int t = 0; t < NT; ++t) {
            const int8_t* xq = acts[t][b].qs + 128 * h + 32 * g + 16 * half;
            __m512i s = _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) {
              int32_t x4;
              std::memcpy(&x4, xq + 4 * k, 4);
              s = _mm512_dpbusd_epi32(s, u[k], _mm512_set1_epi32(x4));
            }
            A[t] = _mm512_dpwssd_epi32(A[t], s, sc[i]);
          }
        }
      }
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + 16 * offsetof(Block, d))));
    for (int t = 0; t < NT; ++t) {
      __m512i B = _mm512_setzero_si512();
      const Rows16BsumPairs& bp = pairs_x[t][b];
      for (int p = 0; p < 8; ++p)
        B = _mm512_add_epi32(B, _mm512_madd_epi16(pairs[p], _mm512_set1_epi32(bp.bs[p])));
      const __m512 dx = _mm512_set1_ps(acts[t][b].d);
      if constexpr (kQ3) {
        A[t] = _mm512_sub_epi32(A[t], _mm512_slli_epi32(B, 2));
      } else {
        const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(pb + 16 * offsetof(BlockQ2_K, dmin))));
        accm[t][b % 8] =
            _mm512_fmadd_ps(_mm512_mul_ps(dmw, dx), _mm512_cvtepi32_ps(B), accm[t][b % 8]);
      }
      acc[t][b % 8] =
          _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(A[t]), acc[t][b % 8]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    const __m512 r =
        kQ3 ? rows16_tree8(acc[t]) : _mm512_sub_ps(rows16_tree8(acc[t]), rows16_tree8(accm[t]));
    _mm512_storeu_ps(y + size_t(t) * ldy, r);
  }
}

// v[j] lane r (dword) -> v[r] lane j: a 16 x 16 transpose of dwords (64 shuffles).
inline void transpose16x16_epi32(__m512i* v) {
  __m512i a[16], b[16];
  // a[2p] / a[2p + 1], 128-bit lane L: rows 4L, 4L + 1 / 4L + 2, 4L + 3 of units 2p, 2p + 1.
  for (int p = 0; p < 8; ++p) {
    a[2 * p] = _mm512_unpacklo_epi32(v[2 * p], v[2 * p + 1]);
    a[2 * p + 1] = _mm512_unpackhi_epi32(v[2 * p], v[2 * p + 1]);
  }
  // b[4m + n], lane L: row 4L + n, units 4m .. 4m + 3.
  for (int m = 0; m < 4; ++m) {
    b[4 * m] = _mm512_unpacklo_epi64(a[4 * m], a[4 * m + 2]);
    b[4 * m + 1] = _mm512_unpackhi_epi64(a[4 * m], a[4 * m + 2]);
    b[4 * m + 2] = _mm512_unpacklo_epi64(a[4 * m + 1], a[4 * m + 3]);
    b[4 * m + 3] = _mm512_unpackhi_epi64(a[4 * m + 1], a[4 * m + 3]);
  }
  // Row 4L + n is lane L of b[n], b[4 + n], b[8 + n], b[12 + n]: a 4 x 4 transpose of lanes.
  for (int n = 0; n < 4; ++n) {
    const __m512i t0 = _mm512_shuffle_i32x4(b[n], b[4 + n], 0x44);
    const __m512i t1 = _mm512_shuffle_i32x4(b[n], b[4 + n], 0xee);
    const __m512i t2 = _mm512_shuffle_i32x4(b[8 + n], b[12 + n], 0x44);
    const __m512i t3 = _mm512_shuffle_i32x4(b[8 + n], b[12 + n], 0xee);
    v[n] = _mm512_shuffle_i32x4(t0, t2, 0x88);
    v[4 + n] = _mm512_shuffle_i32x4(t0, t2, 0xdd);
    v[8 + n] = _mm512_shuffle_i32x4(t1, t3, 0x88);
    v[12 + n] = _mm512_shuffle_i32x4(t1, t3, 0xdd);
  }
}

// v[j] byte r -> v[r] byte j: a 16 x 16 transpose of bytes. Each round interleaves v[p] and
// v[p + 8] byte by byte, which rotates the 8 bits (register, byte) of an element's place by one;
// four rounds swap register and byte.
inline void transpose16x16_epi8(__m128i* v) {
  for (int round = 0; round < 4; ++round) {
    __m128i a[16];
    for (int p = 0; p < 8; ++p) {
      a[2 * p] = _mm_unpacklo_epi8(v[p], v[p + 8]);
      a[2 * p + 1] = _mm_unpackhi_epi8(v[p], v[p + 8]);
    }
    for (int i = 0; i < 16; ++i) v[i] = a[i];
  }
}

// The Q6_K panel at `panel` (nb blocks of 16 rows in Rows16) to its 16 rows in the file's layout
// (dst, row_bytes apart): from_rows16's bytes, by transposes (ql, qh: dwords; scales: bytes).
inline void unpack_q6k_panel(const uint8_t* panel, size_t nb, uint8_t* dst, size_t row_bytes) {
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* pb = panel + b * kQ6KPanelBlock;
    prefetch_ahead<kQ6KPanelBlock>(pb);
    uint8_t* db = dst + b * sizeof(BlockQ6_K);
    // ql: units 0..31 (2 transposes), qh: units 32..47, as the file's bytes 0..191 of each row.
    for (int part = 0; part < 3; ++part) {
      __m512i v[16];
      for (int j = 0; j < 16; ++j) v[j] = _mm512_loadu_si512(pb + 1024 * part + 64 * j);
      transpose16x16_epi32(v);
      for (int r = 0; r < 16; ++r)
        _mm512_storeu_si512(db + size_t(r) * row_bytes + 64 * part, v[r]);
    }
    __m128i sc[16];
    for (int j = 0; j < 16; ++j)
      sc[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 16 * 192 + 16 * j));
    transpose16x16_epi8(sc);
    for (int r = 0; r < 16; ++r) {
      uint8_t* row = db + size_t(r) * row_bytes;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 192), sc[r]);
      std::memcpy(row + 208, pb + 16 * 208 + 2 * r, 2);
    }
  }
}

// Q6_K rows in Rows16 (whole panels) on the VNNI tiles of gemm_vnni.h: each panel unpacked by
// transposes when the tiles first repack one of its rows (once per chunk of tokens).
inline void gemm_q6_k_rows16_tiles(const uint8_t* w, size_t w_row_bytes, const void* x,
                                   size_t n_cols, size_t n_rows, size_t n_tok, float* y,
                                   size_t ldy) {
  thread_local std::vector<uint8_t> rows;  // [16][w_row_bytes]: one panel, unpacked
  const uint8_t* unpacked = nullptr;       // that panel's place in w
  rows.resize(kRows16 * w_row_bytes);
  const size_t nb = n_cols / kSuperBlock;
  gemm_q6_k_vnni_rows(
      [&](size_t r) {
        const uint8_t* at = w + r / kRows16 * kRows16 * w_row_bytes;
        if (at != unpacked) {
          unpack_q6k_panel(at, nb, rows.data(), w_row_bytes);
          unpacked = at;
        }
        return reinterpret_cast<const BlockQ6_K*>(rows.data() + r % kRows16 * w_row_bytes);
      },
      w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Each whole panel of n_rows (a multiple of 16, w at a panel's first row) against n_tok tokens, 8
// at a time, then a rest of 5 to 7 in one chunk, or up to 4 at a time: panel(nt, panel bytes,
// first token, y of the
// panel's first row and token). Chunks of 8 unpack a block's weights half as often as chunks of 4
// (prefill of 256 tokens, tzero bench -p 256, Zen 5 VM: Q4_K 291 -> 336 tokens/s, Q5_K 223 -> 303,
// against 271 and 285 on the file's layout and the VNNI tiles).
template <int Big = 8, typename Panel>
inline void for_rows16_panels(const uint8_t* w, size_t w_row_bytes, size_t n_rows, size_t n_tok,
                              float* y, size_t ldy, Panel&& panel) {
  for (size_t p = 0; p < n_rows; p += kRows16) {
    size_t t = 0;
    for (; t + Big <= n_tok; t += Big)
      panel(std::integral_constant<int, Big>{}, w + p * w_row_bytes, t, y + t * ldy + p);
    if constexpr (Big > 8)
      for (; t + 8 <= n_tok; t += 8)
        panel(std::integral_constant<int, 8>{}, w + p * w_row_bytes, t, y + t * ldy + p);
    // 5 to 7 tokens left (a verification pass of speculative decoding): one chunk, so the
    // weights are read once.
    const size_t left = n_tok - t;
    if (left == 5)
      panel(std::integral_constant<int, 5>{}, w + p * w_row_bytes, t, y + t * ldy + p);
    else if (left == 6)
      panel(std::integral_constant<int, 6>{}, w + p * w_row_bytes, t, y + t * ldy + p);
    else if (left == 7)
      panel(std::integral_constant<int, 7>{}, w + p * w_row_bytes, t, y + t * ldy + p);
    else
      for_token_chunks(left, [&](auto nt, size_t t1) {
        panel(nt, w + p * w_row_bytes, t + t1, y + (t + t1) * ldy + p);
      });
  }
}

// Tokens t .. t + NT - 1's rows of a per-token array of nb entries each (activation blocks, their
// precomputed terms), as the panel kernels take them.
template <int NT, typename T>
inline std::array<const T*, NT> token_rows(const T* per_token, size_t t, size_t nb) {
  std::array<const T*, NT> rows;
  for (int k = 0; k < NT; ++k) rows[size_t(k)] = per_token + (t + size_t(k)) * nb;
  return rows;
}

// y[t * ldy + r] for r < n_rows (a multiple of 16, w at a panel's first row), t < n_tok; Block:
// BlockQ4_K or BlockQ5_K.
template <typename Block>
void gemm_k4_rows16(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                    size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  thread_local std::vector<Rows16Act> terms;
  terms.resize(n_tok * nb);
  for (size_t i = 0; i < n_tok * nb; ++i) {
    const ActQ8K& a = xq[i];
    terms[i].d = a.d;
    for (int k = 0; k < 4; ++k) {
      const int16_t lo = int16_t(a.bsums[4 * k] + a.bsums[4 * k + 1]);
      const int16_t hi = int16_t(a.bsums[4 * k + 2] + a.bsums[4 * k + 3]);
      terms[i].bs_pairs[k] = int32_t(uint32_t(uint16_t(lo)) | uint32_t(uint16_t(hi)) << 16);
    }
  }
  for_rows16_panels(w, w_row_bytes, n_rows, n_tok, y, ldy,
                    [&](auto nt, const uint8_t* panel, size_t t, float* yp) {
                      constexpr int NT = decltype(nt)::value;
                      k4_rows16_panel<Block, NT>(panel, nb, token_rows<NT>(xq, t, nb).data(),
                                                 token_rows<NT>(terms.data(), t, nb).data(), yp,
                                                 ldy);
                    });
}

// The same for Q6_K rows.
inline void gemm_q6_k_rows16(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                             size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  for_rows16_panels(w, w_row_bytes, n_rows, n_tok, y, ldy,
                    [&](auto nt, const uint8_t* panel, size_t t, float* yp) {
                      constexpr int NT = decltype(nt)::value;
                      q6k_rows16_panel<NT>(panel, nb, token_rows<NT>(xq, t, nb).data(), yp, ldy);
                    });
}

// The same for Q2_K or Q3_K rows.
template <typename Block>
void gemm_k2_rows16(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                    size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  thread_local std::vector<Rows16BsumPairs> bsp;
  bsp.resize(n_tok * nb);
  for (size_t i = 0; i < n_tok * nb; ++i)
    for (int m = 0; m < 4; ++m)
      for (int k = 0; k < 2; ++k)
        bsp[i].bs[2 * m + k] = int32_t(uint32_t(uint16_t(xq[i].bsums[4 * m + k])) |
                                       uint32_t(uint16_t(xq[i].bsums[4 * m + k + 2])) << 16);
  for_rows16_panels(w, w_row_bytes, n_rows, n_tok, y, ldy,
                    [&](auto nt, const uint8_t* panel, size_t t, float* yp) {
                      constexpr int NT = decltype(nt)::value;
                      k2_rows16_panel<Block, NT>(panel, nb, token_rows<NT>(xq, t, nb).data(),
                                                 token_rows<NT>(bsp.data(), t, nb).data(), yp, ldy);
                    });
}

// The same for IQ4_XS rows.
inline void gemm_iq4_xs_rows16(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                               size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  for_rows16_panels<16>(w, w_row_bytes, n_rows, n_tok, y, ldy,
                        [&](auto nt, const uint8_t* panel, size_t t, float* yp) {
                          constexpr int NT = decltype(nt)::value;
                          const auto a = token_rows<NT>(xq, t, nb);
                          iq4xs_rows16_panel<NT>(panel, nb, a.data(), yp, ldy);
                        });
}

}  // namespace
}  // namespace tzero::x86
