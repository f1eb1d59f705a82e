// Few-token gemms (decode) of the 32-element block types' rows in the Blocks8 layout
// (kernels/weight_layout.h) for the avx2 set, in dot-v1's order (kernels/dot.h): per block b the
// exact int32 isum[b], p[b] = d_w[b] * d_x[b], acc[b % 8] = fma(p[b], float(isum[b]), acc[b % 8])
// on 8 block lanes, the 8-lane tree (Q4_1 and Q5_1: tree8(acc) + tree8(accm), their mins' lanes
// alike).
//
// How, per group of 8 blocks: the 8 scales are one 16-byte load; a ymm load of the quants holds
// two blocks (one per 128-bit lane), whose low nibbles are their elements 0-15 and high nibbles
// 16-31; the activations were laid out once per call in that order (per pair of blocks, their
// elements 0-15, then 16-31). Q4_0 and Q4_1 multiply the unsigned nibbles (Q4_0's sum less
// 8 * sum(x_q), precomputed; Q5_0/Q5_1 with qh's fifth bits, Q5_0 less 16 * sum(x_q)):
// VPMADDUBSW of both halves, added in int16 (|s| <= 4 * 31 * 127), VPMADDWD to int32; IQ4_NL's
// and MXFP4's table values are signed, so |w| against sign(x, w), each half widened to int32
// apart (|s| <= 2 * 127 * 127 per int16). Three VPHADDD and a VPERMD fold the 4 pairs' partial
// sums into the 8 exact block sums. Q8_0: a ymm per block (|w| against sign(x, w)), folded by
// hsum8x8. A row's last nb % 8 blocks are laid out as a zero-padded Blocks8 group and taken the
// same way, their lanes blended so a lane past the end keeps its value. Included only by
// avx2.cpp.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_legacy.h"
#include "kernels/weight_layout.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/decode_acts.h"

namespace tzero::x86 {
namespace {

// The types: kOffset, the unsigned weights are w_int + kOffset (0: Q4_1's and Q5_1's, already
// unsigned, and the signed weights, taken as |w| against sign(x, w): kTable's values and Q8_0);
// kMin, the min lanes; kFifth, qh's fifth bits; kWhole, Q8_0's 32 bytes per block (a ymm each);
// kE8M0, MXFP4's scale byte.
struct B8Traits {
  static constexpr int kOffset = 0;
  static constexpr bool kMin = false, kTable = false, kFifth = false, kWhole = false, kE8M0 = false;
  static constexpr const int8_t* kValues = nullptr;
};
struct B8Q4_0 : B8Traits {
  using Block = BlockQ4_0;
  static constexpr TensorType kType = TensorType::Q4_0;
  static constexpr int kOffset = 8;
};
struct B8Q4_1 : B8Traits {
  using Block = BlockQ4_1;
  static constexpr TensorType kType = TensorType::Q4_1;
  static constexpr bool kMin = true;
};
struct B8Q5_0 : B8Traits {
  using Block = BlockQ5_0;
  static constexpr TensorType kType = TensorType::Q5_0;
  static constexpr int kOffset = 16;
  static constexpr bool kFifth = true;
};
struct B8Q5_1 : B8Traits {
  using Block = BlockQ5_1;
  static constexpr TensorType kType = TensorType::Q5_1;
  static constexpr bool kMin = true, kFifth = true;
};
struct B8IQ4_NL : B8Traits {
  using Block = BlockIQ4_NL;
  static constexpr TensorType kType = TensorType::IQ4_NL;
  static constexpr bool kTable = true;
  static constexpr const int8_t* kValues = kIq4nlValues;
};
struct B8MXFP4 : B8Traits {
  using Block = BlockMXFP4;
  static constexpr TensorType kType = TensorType::MXFP4;
  static constexpr bool kTable = true, kE8M0 = true;
  static constexpr const int8_t* kValues = kMxfp4Values;
};
struct B8Q8_0 : B8Traits {
  using Block = BlockQ8_0;
  static constexpr TensorType kType = TensorType::Q8_0;
  static constexpr bool kWhole = true;
};

// 8 E8M0 bytes as floats 2^(e - 128): the exponent field e - 1, or for e < 2 the subnormal
// 0x00200000 << e (exact either way; kernels/quant_legacy.h).
inline __m256 e8m0x8_to_float_avx2(__m128i v) {
  const __m256i e = _mm256_cvtepu8_epi32(v);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, small));
}

// The fifth bits of blocks 2p, 2p + 1 (their qh side by side at qh8) as bytes of 16 where set:
// lo for elements 0-15 (bits 0-15), hi for 16-31, block 2p in the low 128-bit lane.
inline void fifth_bits_pair(const uint8_t* qh8, __m256i* lo, __m256i* hi) {
  int64_t q;
  std::memcpy(&q, qh8, 8);
  const __m256i v = _mm256_set1_epi64x(q);  // [qh0 qh1] in both lanes
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  const __m256i sel_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5);
  const __m256i sel_hi = _mm256_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,  //
                                          6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
  const __m256i sixteen = _mm256_set1_epi8(16);
  const __m256i bl = _mm256_and_si256(_mm256_shuffle_epi8(v, sel_lo), bit);
  const __m256i bh = _mm256_and_si256(_mm256_shuffle_epi8(v, sel_hi), bit);
  *lo = _mm256_and_si256(_mm256_cmpeq_epi8(bl, bit), sixteen);
  *hi = _mm256_and_si256(_mm256_cmpeq_epi8(bh, bit), sixteen);
}

// 4 vectors of int32 partials, pair p's block 2p in the low 128-bit lane, 2p + 1 in the high:
// the 8 block sums in order (exact).
inline __m256i fold_pairs(const __m256i* v) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  // h = [b0 b2 b4 b6 | b1 b3 b5 b7]
  return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// NT tokens (1 to 4): a group's weights unpacked once for every token, each (row, token) with
// its own accumulators; the rows walked as for_row_streams' side-by-side ranges.
template <typename U, int NT>
void b8_rows_decode_avx2(const uint8_t* w, size_t w_row_bytes, const DecodeActs* a, size_t nb,
                         size_t n_rows, float* y, size_t ldy) {
  using Block = typename U::Block;
  constexpr size_t kGroup = 8 * sizeof(Block), kQs = 8 * offsetof(Block, qs);
  const size_t nfull = nb / 8 * 8;
  const __m256i nib = _mm256_set1_epi8(15), ones16 = _mm256_set1_epi16(1);
  __m256i table = _mm256_setzero_si256();
  if constexpr (U::kTable)
    table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(U::kValues)));
  // A group's 8 scales (MXFP4: E8M0 bytes, the others f16 d) and Q4_1/Q5_1's mins.
  auto scales = [](const uint8_t* g) {
    if constexpr (U::kE8M0)
      return e8m0x8_to_float_avx2(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g)));
    else
      return _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 8 * offsetof(Block, d))));
  };
  // One Blocks8 group at g against every token. live: the lanes to update (a tail's), or
  // std::false_type for a full group (every lane, no blend).
  auto group = [&](const uint8_t* g, size_t b0, auto live, __m256* acc, __m256* accm) {
    auto update = [&](__m256 old, __m256 v) {
      if constexpr (std::is_same_v<decltype(live), std::false_type>)
        return v;
      else
        return _mm256_blendv_ps(old, v, live);
    };
    __m256i lo[4], hi[4];  // pair p's elements 0-15 and 16-31 (not Q8_0)
    __m256i wq[8];         // Q8_0: block j's signed quants
    if constexpr (U::kWhole) {
      for (int j = 0; j < 8; ++j)
        wq[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kQs + 32 * j));
    } else {
      for (int p = 0; p < 4; ++p) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + kQs + 32 * p));
        lo[p] = _mm256_and_si256(q, nib);
        hi[p] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
        if constexpr (U::kTable) {
          lo[p] = _mm256_shuffle_epi8(table, lo[p]);
          hi[p] = _mm256_shuffle_epi8(table, hi[p]);
        }
        if constexpr (U::kFifth) {
          __m256i fl, fh;
          fifth_bits_pair(g + 8 * offsetof(Block, qh) + 8 * p, &fl, &fh);
          lo[p] = _mm256_or_si256(lo[p], fl);
          hi[p] = _mm256_or_si256(hi[p], fh);
        }
      }
    }
    const __m256 dw = scales(g);
    __m256 mw = _mm256_setzero_ps();
    if constexpr (U::kMin)
      mw = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 8 * offsetof(Block, m))));
    for (int t = 0; t < NT; ++t) {
      const uint8_t* xg = a[t].qs.data() + 32 * b0;
      __m256i isum;
      if constexpr (U::kWhole) {
        __m256i part[8];
        for (int j = 0; j < 8; ++j) {
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg + 32 * j));
          part[j] = _mm256_madd_epi16(
              _mm256_maddubs_epi16(_mm256_sign_epi8(wq[j], wq[j]), _mm256_sign_epi8(xv, wq[j])),
              ones16);
        }
        isum = hsum8x8(part);
      } else {
        __m256i part[4];
        for (int p = 0; p < 4; ++p) {
          const __m256i xl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg + 64 * p));
          const __m256i xh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xg + 64 * p + 32));
          if constexpr (U::kTable) {
            const __m256i sl = _mm256_madd_epi16(
                _mm256_maddubs_epi16(_mm256_sign_epi8(lo[p], lo[p]), _mm256_sign_epi8(xl, lo[p])),
                ones16);
            const __m256i sh = _mm256_madd_epi16(
                _mm256_maddubs_epi16(_mm256_sign_epi8(hi[p], hi[p]), _mm256_sign_epi8(xh, hi[p])),
                ones16);
            part[p] = _mm256_add_epi32(sl, sh);
          } else {  // |s| <= 4 * 31 * 127 in int16
            part[p] = _mm256_madd_epi16(
                _mm256_add_epi16(_mm256_maddubs_epi16(lo[p], xl), _mm256_maddubs_epi16(hi[p], xh)),
                ones16);
          }
        }
        isum = fold_pairs(part);
      }
      if constexpr (U::kOffset != 0)
        isum = _mm256_sub_epi32(
            isum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&a[t].off[b0])));
      const __m256 dx = _mm256_loadu_ps(&a[t].dx[b0]);
      acc[t] =
          update(acc[t], _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(isum), acc[t]));
      if constexpr (U::kMin)
        accm[t] = update(accm[t], _mm256_fmadd_ps(_mm256_mul_ps(mw, dx),
                                                  _mm256_loadu_ps(&a[t].xsum[b0]), accm[t]));
    }
  };
  for_row_streams(n_rows, [&](auto count, const size_t* rows) {
    constexpr size_t S = decltype(count)::value;
    const uint8_t* wr[S];
    __m256 acc[S][NT], accm[S][NT];
    for (size_t k = 0; k < S; ++k) {
      wr[k] = w + rows[k] * w_row_bytes;
      for (int t = 0; t < NT; ++t) acc[k][t] = accm[k][t] = _mm256_setzero_ps();
    }
    for (size_t b0 = 0; b0 < nfull; b0 += 8)
      for (size_t k = 0; k < S; ++k) {
        prefetch_ahead<kGroup>(wr[k] + b0 * sizeof(Block));
        group(wr[k] + b0 * sizeof(Block), b0, std::false_type{}, acc[k], accm[k]);
      }
    for (size_t k = 0; k < S; ++k) {
      if (nfull < nb) {  // the tail, in the file's layout: zero-padded, laid out as Blocks8
        alignas(32) uint8_t pad[kGroup] = {};
        std::memcpy(pad, wr[k] + nfull * sizeof(Block), (nb - nfull) * sizeof(Block));
        to_blocks8(U::kType, pad, 1, kGroup);
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256 live = _mm256_castsi256_ps(
            _mm256_cmpgt_epi32(_mm256_set1_epi32(int(nb - nfull)), lane));  // lane < nb - nfull
        group(pad, nfull, live, acc[k], accm[k]);
      }
      for (int t = 0; t < NT; ++t) {
        const float s = reduce8(acc[k][t]);
        y[size_t(t) * ldy + rows[k]] = U::kMin ? s + reduce8(accm[k][t]) : s;
      }
    }
  });
}

// y[t * ldy + r] for n_tok tokens, at most 4 at a time (the activations laid out once per call).
template <typename U>
void gemm_b8_decode_avx2(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                         size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kQBlock;
  for_decode_tokens<U::kOffset, U::kWhole ? 0 : 2>(
      x, nb, n_tok, [&](auto nt, const DecodeActs* a, size_t t) {
        b8_rows_decode_avx2<U, decltype(nt)::value>(w, w_row_bytes, a, nb, n_rows, y + t * ldy,
                                                    ldy);
      });
}

}  // namespace
}  // namespace tzero::x86
