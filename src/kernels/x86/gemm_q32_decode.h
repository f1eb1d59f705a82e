// Single-token gemms (decode) of the 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL, MXFP4) for the avx512 set, in dot-v1's order (kernels/dot.h): per block b the exact
// int32 isum[b], p[b] = d_w[b] * d_x[b], acc[b % 8] = fma(p[b], float(isum[b]), acc[b % 8]) on
// 8 block lanes, the 8-lane tree (and Q4_1/Q5_1's min lanes likewise, tree8(acc) + tree8(accm)).
//
// How, per group of 8 weight blocks of a row (decode is bound by how fast a core gets through
// them; docs/BENCHMARKS.md, "Decode against the memory bus"):
// - the weights become unsigned bytes u = w_int + offset (Q4_0 8, Q5_0 16, IQ4_NL/MXFP4 128 via
//   a table lookup, Q8_0 128 via xor; Q4_1/Q5_1 0): a zmm holds 4 blocks' elements 0-15 (one
//   block per 128-bit lane) and another their elements 16-31; Q8_0 a whole block per 256 bits.
// - the activations were laid out once per call in the same order, so one VPDPBUSD per zmm
//   gives 4 partial int32 sums per block; a fixed shuffle tree folds them into the 8 exact
//   block sums of one ymm, minus offset * sum(x_q[b]) (precomputed per call), exact in int32.
// - the 8 f16 scales are widened with one VCVTPH2PS, and the fma runs on the 8 block lanes at
//   once (masked on a short last group, so a lane past the end keeps its value).
// Rows in the file's layout are gathered block by block (VINSERTI32X4 per block's quants, VPINSRW
// per scale); rows in the Blocks8 layout (kernels/weight_layout.h, repacked at load) give a
// group's quants and scales in three plain loads, 1.5x the blocks per second of one core.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_legacy.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/decode_acts.h"

namespace tzero::x86 {
namespace {

inline uint16_t load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The f16 field at p of 8 consecutive blocks of `stride` bytes, as 8 floats: VPINSRW from
// memory (measured faster on Zen 4 than assembling the 8 halves in general-purpose registers,
// 25.5 against 20.9 GB/s of Q4_0 from L3, or than VPGATHERDD, 20.0).
inline __m256 gather8_f16(const uint8_t* p, size_t stride) {
  __m128i v = _mm_cvtsi32_si128(int(load_u16(p)));
  v = _mm_insert_epi16(v, int(load_u16(p + stride)), 1);
  v = _mm_insert_epi16(v, int(load_u16(p + 2 * stride)), 2);
  v = _mm_insert_epi16(v, int(load_u16(p + 3 * stride)), 3);
  v = _mm_insert_epi16(v, int(load_u16(p + 4 * stride)), 4);
  v = _mm_insert_epi16(v, int(load_u16(p + 5 * stride)), 5);
  v = _mm_insert_epi16(v, int(load_u16(p + 6 * stride)), 6);
  v = _mm_insert_epi16(v, int(load_u16(p + 7 * stride)), 7);
  return _mm256_cvtph_ps(v);
}

// 16 bytes at p, p + s, p + 2s, p + 3s: one per 128-bit lane.
inline __m512i load4x16(const uint8_t* p, size_t s) {
  const __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i v1 =
      _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + s)), 1);
  const __m512i v2 =
      _mm512_inserti32x4(v1, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * s)), 2);
  return _mm512_inserti32x4(v2, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * s)), 3);
}

// Bit i of 4 blocks' 32-bit qh (at p, stride s) as byte masks: lo for elements 0-15 (bits 0-15),
// hi for 16-31, block j in bytes 16j..16j+15.
inline void fifth_bit_masks(const uint8_t* p, size_t s, __mmask64* lo, __mmask64* hi) {
  uint64_t l = 0, h = 0;
  for (int j = 0; j < 4; ++j) {
    const uint64_t q = load_u32(p + size_t(j) * s);
    l |= (q & 0xffff) << (16 * j);
    h |= (q >> 16) << (16 * j);
  }
  *lo = _cvtu64_mask64(l);
  *hi = _cvtu64_mask64(h);
}

// Blocks j0 .. j0 + 3 of a group of 8 at g, in the file's layout or in Blocks8
// (kernels/weight_layout.h: field f of block j at 8 * offsetof(f) + j * sizeof(f)).
template <typename B, bool B8>
struct Group4Of {
  const uint8_t* g;
  size_t j0;
  // Block j0's field at block offset `off` (`size` bytes), and the stride to block j0 + 1's.
  const uint8_t* field(size_t off, size_t size) const {
    return B8 ? g + 8 * off + j0 * size : g + j0 * sizeof(B) + off;
  }
  size_t stride(size_t size) const { return B8 ? size : sizeof(B); }
  // The 4 blocks' 16 quant bytes, one block per 128-bit lane.
  __m512i qs() const {
    const uint8_t* p = field(offsetof(B, qs), 16);
    if constexpr (B8) return _mm512_loadu_si512(p);
    return load4x16(p, sizeof(B));
  }
};

// The per-type pieces. kOffset: the unsigned weights are w_int + kOffset; kMin: Q4_1/Q5_1's min
// lanes; kQs / kQh / kD / kM: byte offsets of the fields in Block; unpack4: 4 blocks to (lo, hi).
template <typename B, int Offset, bool Min>
struct NibbleDecode {
  using Block = B;
  static constexpr int kOffset = Offset;
  static constexpr bool kMin = Min, kWhole = false;
  static constexpr size_t kQs = offsetof(B, qs);
  template <bool B8>
  static void nibbles(const Group4Of<B, B8>& g, __m512i* lo, __m512i* hi) {
    const __m512i q = g.qs();
    const __m512i m = _mm512_set1_epi8(15);
    *lo = _mm512_and_si512(q, m);
    *hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m);
  }
};

struct DecQ4_0 : NibbleDecode<BlockQ4_0, 8, false> {
  template <bool B8>
  static void unpack4(const Group4Of<Block, B8>& g, __m512i* lo, __m512i* hi) {
    nibbles(g, lo, hi);
  }
};
struct DecQ4_1 : NibbleDecode<BlockQ4_1, 0, true> {
  template <bool B8>
  static void unpack4(const Group4Of<Block, B8>& g, __m512i* lo, __m512i* hi) {
    nibbles(g, lo, hi);
  }
};
template <typename B, int Offset, bool Min>
struct Fifth : NibbleDecode<B, Offset, Min> {
  template <bool B8>
  static void unpack4(const Group4Of<B, B8>& g, __m512i* lo, __m512i* hi) {
    NibbleDecode<B, Offset, Min>::nibbles(g, lo, hi);
    __mmask64 ml, mh;
    if constexpr (B8) {
      // The 4 blocks' qh side by side: their low halves, then their high halves, by one shuffle.
      const __m128i qh =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g.field(offsetof(B, qh), 4)));
      const __m128i v =
          _mm_shuffle_epi8(qh, _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
      ml = _cvtu64_mask64(uint64_t(_mm_cvtsi128_si64(v)));
      mh = _cvtu64_mask64(uint64_t(_mm_extract_epi64(v, 1)));
    } else {
      fifth_bit_masks(g.field(offsetof(B, qh), 4), g.stride(4), &ml, &mh);
    }
    const __m512i sixteen = _mm512_set1_epi8(16);
    *lo = _mm512_mask_add_epi8(*lo, ml, *lo, sixteen);
    *hi = _mm512_mask_add_epi8(*hi, mh, *hi, sixteen);
  }
};
using DecQ5_0 = Fifth<BlockQ5_0, 16, false>;
using DecQ5_1 = Fifth<BlockQ5_1, 0, true>;
// IQ4_NL and MXFP4: their int8 table values + 128, looked up per 128-bit lane.
template <typename B, const int8_t* Values>
struct TableDecode : NibbleDecode<B, 128, false> {
  static __m512i table() {
    return _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(Values))),
        _mm512_set1_epi8(-128));
  }
  template <bool B8>
  static void unpack4(const Group4Of<B, B8>& g, __m512i* lo, __m512i* hi) {
    NibbleDecode<B, 128, false>::nibbles(g, lo, hi);
    const __m512i t = table();
    *lo = _mm512_shuffle_epi8(t, *lo);
    *hi = _mm512_shuffle_epi8(t, *hi);
  }
};
using DecIQ4_NL = TableDecode<BlockIQ4_NL, kIq4nlValues>;
using DecMXFP4 = TableDecode<BlockMXFP4, kMxfp4Values>;
// Q8_0: a whole block per 256 bits (its activations likewise), + 128 by flipping the sign bit.
struct DecQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 128;
  static constexpr bool kMin = false, kWhole = true;
  // Blocks 2k and 2k + 1 of a group at g (B8: Blocks8).
  template <bool B8>
  static __m512i pair(const uint8_t* g, int k) {
    __m512i w;
    if constexpr (B8) {
      w = _mm512_loadu_si512(g + 8 * offsetof(Block, qs) + 64 * k);
    } else {
      const Block* b = reinterpret_cast<const Block*>(g) + 2 * k;
      const __m512i v =
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs)));
      w = _mm512_inserti64x4(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
    }
    return _mm512_xor_si512(w, _mm512_set1_epi8(-128));
  }
};

// e8m0_half_to_float on the 8 bytes of v's low half: 2^(e - 128) is the float with exponent
// field e - 1, or for e < 2 the subnormal 0x00200000 << e (exact either way).
inline __m256 e8m0x8_to_float(__m128i v) {
  const __m256i e = _mm256_cvtepu8_epi32(v);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __mmask8 small = _mm256_cmplt_epu32_mask(e, _mm256_set1_epi32(2));
  return _mm256_castsi256_ps(_mm256_mask_blend_epi32(small, normal, sub));
}

// 8 blocks' scales as floats (MXFP4: E8M0, the others f16 d), and Q4_1/Q5_1's mins, of the
// group at g: gathered from the file's blocks, or loaded whole from Blocks8.
template <typename U, bool B8>
inline __m256 block_scales8(const uint8_t* g) {
  using Block = typename U::Block;
  if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    if constexpr (B8) return e8m0x8_to_float(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(g)));
    const uint8_t* p = g + offsetof(Block, e);
    constexpr size_t s = sizeof(BlockMXFP4);
    __m128i v = _mm_cvtsi32_si128(p[0]);
    v = _mm_insert_epi8(v, p[s], 1);
    v = _mm_insert_epi8(v, p[2 * s], 2);
    v = _mm_insert_epi8(v, p[3 * s], 3);
    v = _mm_insert_epi8(v, p[4 * s], 4);
    v = _mm_insert_epi8(v, p[5 * s], 5);
    v = _mm_insert_epi8(v, p[6 * s], 6);
    v = _mm_insert_epi8(v, p[7 * s], 7);
    return e8m0x8_to_float(v);
  } else {
    if constexpr (B8)
      return _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 8 * offsetof(Block, d))));
    return gather8_f16(g + offsetof(Block, d), sizeof(Block));
  }
}
template <typename U, bool B8>
inline __m256 block_mins8(const uint8_t* g) {
  using Block = typename U::Block;
  if constexpr (B8)
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + 8 * offsetof(Block, m))));
  return gather8_f16(g + offsetof(Block, m), sizeof(Block));
}

// P (blocks 0-3) and Q (blocks 4-7), 4 int32 partials of block j in 128-bit lane j: the 8 block
// sums in order (exact).
inline __m256i fold_blocks(__m512i P, __m512i Q) {
  const __m512i w = _mm512_add_epi32(_mm512_unpacklo_epi64(P, Q), _mm512_unpackhi_epi64(P, Q));
  const __m512i x = _mm512_add_epi32(w, _mm512_shuffle_epi32(w, _MM_PERM_CDAB));
  // Lane j now holds [p_j, p_j, q_j, q_j].
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castsi512_si256(_mm512_permutexvar_epi32(idx, x));
}

// The float part of a group: the 8 block sums folded from P and Q, minus the offsets, then
// acc (and the min lanes accm) fma'd on the live lanes. dw, mw: the weights' scales and mins.
template <typename U>
inline void accumulate_group(__m512i P, __m512i Q, __m256 dw, __m256 mw, const DecodeActs& a,
                             size_t b0, __mmask8 live, __m256* acc, __m256* accm) {
  __m256i isum = fold_blocks(P, Q);
  if constexpr (U::kOffset != 0)
    isum = _mm256_sub_epi32(isum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&a.off[b0])));
  const __m256 dx = _mm256_loadu_ps(&a.dx[b0]);
  *acc = _mm256_mask3_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(isum), *acc, live);
  if constexpr (U::kMin)
    *accm = _mm256_mask3_fmadd_ps(_mm256_mul_ps(mw, dx), _mm256_loadu_ps(&a.xsum[b0]), *accm, live);
}

// NT tokens (1 to 4) of a few-token gemm: each group's weights are unpacked once and taken
// against every token's activations; each (row, token) keeps its own accumulators, so its order
// is that of a single token. The rows are walked as for_row_streams' side-by-side ranges. B8:
// the rows are in the Blocks8 layout (kernels/weight_layout.h; a row's last nb % 8 blocks as in
// the file).
template <typename U, int NT, bool B8>
void q32_rows_decode(const uint8_t* w, size_t w_row_bytes, const DecodeActs* a, size_t nb,
                     size_t n_rows, float* y, size_t ldy) {
  using Block = typename U::Block;
  const size_t nfull = nb / 8 * 8;
  // One group of 8 blocks at g (a full group, in the rows' layout, or the zero-padded tail in
  // the file's layout: GB8).
  auto group = [&](auto gb8, const uint8_t* g, size_t b0, __mmask8 live, __m256* acc,
                   __m256* accm) {
    constexpr bool GB8 = decltype(gb8)::value;
    const __m512i z = _mm512_setzero_si512();
    __m512i wq[4];  // Q8_0: blocks (0, 1) .. (6, 7); the others: lo0, hi0, lo1, hi1
    if constexpr (U::kWhole) {
      for (int k = 0; k < 4; ++k) wq[k] = U::template pair<GB8>(g, k);
    } else {
      U::unpack4(Group4Of<Block, GB8>{g, 0}, &wq[0], &wq[1]);
      U::unpack4(Group4Of<Block, GB8>{g, 4}, &wq[2], &wq[3]);
    }
    const __m256 dw = block_scales8<U, GB8>(g);
    __m256 mw = _mm256_setzero_ps();
    if constexpr (U::kMin) mw = block_mins8<U, GB8>(g);
    for (int t = 0; t < NT; ++t) {
      const uint8_t* xg = a[t].qs.data() + 32 * b0;
      __m512i P, Q;
      if constexpr (U::kWhole) {
        __m512i rr[4];
        for (int k = 0; k < 4; ++k)
          rr[k] = _mm512_dpbusd_epi32(z, wq[k], _mm512_loadu_si512(xg + 64 * k));
        // [b0 lo, b0 hi, b1 lo, b1 hi] and [b2 ..]: one block per 128-bit lane.
        P = _mm512_add_epi32(_mm512_shuffle_i64x2(rr[0], rr[1], 0x88),
                             _mm512_shuffle_i64x2(rr[0], rr[1], 0xdd));
        Q = _mm512_add_epi32(_mm512_shuffle_i64x2(rr[2], rr[3], 0x88),
                             _mm512_shuffle_i64x2(rr[2], rr[3], 0xdd));
      } else {
        P = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, wq[0], _mm512_loadu_si512(xg)), wq[1],
                                _mm512_loadu_si512(xg + 64));
        Q = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, wq[2], _mm512_loadu_si512(xg + 128)), wq[3],
                                _mm512_loadu_si512(xg + 192));
      }
      accumulate_group<U>(P, Q, dw, mw, a[t], b0, live, &acc[t], &accm[t]);
    }
  };
  for_row_streams(n_rows, [&](auto count, const size_t* rows) {
    constexpr size_t S = decltype(count)::value;
    const Block* wr[S];
    __m256 acc[S][NT], accm[S][NT];
    for (size_t k = 0; k < S; ++k) {
      wr[k] = reinterpret_cast<const Block*>(w + rows[k] * w_row_bytes);
      for (int t = 0; t < NT; ++t) acc[k][t] = accm[k][t] = _mm256_setzero_ps();
    }
    for (size_t b0 = 0; b0 < nfull; b0 += 8)
      for (size_t k = 0; k < S; ++k) {
        prefetch_ahead<8 * sizeof(Block)>(wr[k] + b0);
        group(std::bool_constant<B8>{}, reinterpret_cast<const uint8_t*>(wr[k] + b0), b0, 0xff,
              acc[k], accm[k]);
      }
    for (size_t k = 0; k < S; ++k) {
      if (nfull < nb) {
        Block pad[8];
        std::memset(pad, 0, sizeof pad);
        std::memcpy(pad, wr[k] + nfull, (nb - nfull) * sizeof(Block));
        group(std::false_type{}, reinterpret_cast<const uint8_t*>(pad), nfull,
              __mmask8((1u << (nb - nfull)) - 1), acc[k], accm[k]);
      }
      for (int t = 0; t < NT; ++t) {
        const float s = reduce8(acc[k][t]);
        y[size_t(t) * ldy + rows[k]] = U::kMin ? s + reduce8(accm[k][t]) : s;
      }
    }
  });
}

// y[t * ldy + r] for n_tok tokens, at most 4 at a time (the activations laid out once per call);
// B8: the rows in the Blocks8 layout.
template <typename U, bool B8 = false>
void gemm_q32_decode_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                            size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kQBlock;
  for_decode_tokens<U::kOffset, U::kWhole ? 0 : 4>(
      x, nb, n_tok, [&](auto nt, const DecodeActs* a, size_t t) {
        q32_rows_decode<U, decltype(nt)::value, B8>(w, w_row_bytes, a, nb, n_rows, y + t * ldy,
                                                    ldy);
      });
}

}  // namespace
}  // namespace tzero::x86
