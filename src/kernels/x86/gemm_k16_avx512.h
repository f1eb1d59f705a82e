// IQ4_XS, Q3_K and Q2_K gemms for the avx512 set (included only by avx512.cpp), from the unpacked
// blocks of gemm_k16.h, in dot-v1's orders (kernels/dot.h): IQ4_XS and Q3_K Q6_K's (acc with
// d_w * d_x and A), Q2_K Q4_K's (also accm with dmin_w * d_x and B, result tree8(acc) -
// tree8(accm)).
//
// Decode (1 or 2 tokens): a zmm holds 64 unsigned quants u (16-element sub-blocks 4c .. 4c+3)
// against 64 activation bytes; vpdpbusd gives exact int32 sums of 4 products, scaled lane by lane
// by their sub-block's scale (vpmulld), so A + kOff * S = the sum of those, S = sum of s[i] *
// bsums[i] (one vpmaddwd). Each block's partials fold with the 7 other blocks' of its group into
// one ymm of 8 exact A values, lane = b % 8, as gemm_q4k_decode.h does; the fma runs on the
// 8 block lanes at once, masked on a short last group.
//
// Batched (3 tokens or more): gemm_vnni.h's Q6_K tiles generalized: operands repacked per group of
// 8 blocks (dword lane i = block i), each sub-block sum (16 elements; IQ4_XS 32, one per scale)
// starting from -kOff * (its activation sum), scaled by vpmulld; Q2_K adds B with vpdpwssd over
// (min, min) and (bsum, bsum) int16 pairs.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/x86/gemm_k16.h"
#include "kernels/x86/gemm_q4k_decode.h"
#include "kernels/x86/gemm_vnni.h"

namespace tzero::x86 {
namespace {

constexpr size_t kVnniMinTokK16 = 3;

// One block for the decode kernel: the quants of chunk c (elements 64c .. 64c+63) in q[c], each
// int32 lane's sub-block scale in sc[c] (lane k covers elements 64c + 4k .. +3), and the 16
// int16 values whose vpmaddwd with bsums gives S (scales) or B (Q2_K: mins).
struct K16DecodeBlock {
  __m512i q[4], sc[4];
  __m256i s16;
};

template <typename Block>
inline void k16_decode_unpack(const Block& wb, K16DecodeBlock* o) {
  // vpermd indices: lane k of chunk c has 16-element sub-block 4c + k/4.
  const __m512i idx[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7),
      _mm512_setr_epi32(8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11),
      _mm512_setr_epi32(12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15)};
  K16Unpacked u;
  k16_unpack(wb, &u);
  const __m512i s32 = _mm512_cvtepi8_epi32(u.sc);
  for (int c = 0; c < 4; ++c) {
    o->q[c] = _mm512_inserti64x4(_mm512_castsi256_si512(u.u[2 * c]), u.u[2 * c + 1], 1);
    o->sc[c] = _mm512_permutexvar_epi32(idx[c], s32);
  }
  o->s16 = K16Traits<Block>::kMins ? _mm256_cvtepu8_epi16(u.m) : _mm256_cvtepi8_epi16(u.sc);
}

// IQ4_XS without the AVX2 unpack: chunk c's 32 bytes (sub-blocks 2c, 2c+1) as lanes [A, A, B, B]
// of a zmm, the odd lanes shifted by 4: [low nibbles of A, high of A, low of B, high of B], the
// element order; one vpshufb maps the nibbles to kIQ4NLValues + 128.
template <>
inline void k16_decode_unpack(const BlockIQ4_XS& wb, K16DecodeBlock* o) {
  const __m512i shifts = _mm512_setr_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0,
                                           0x0004000400040004, 0x0004000400040004);
  const __m512i idx[4] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                          _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
                          _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
                          _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues));
  const __m512i tbl = _mm512_broadcast_i32x4(_mm_xor_si128(t, _mm_set1_epi8(char(0x80))));
  const __m512i nib = _mm512_set1_epi8(15);
  for (int c = 0; c < 4; ++c) {
    const __m512i q = _mm512_castsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * c)));
    const __m512i z = _mm512_srlv_epi16(_mm512_shuffle_i64x2(q, q, 0x50), shifts);
    o->q[c] = _mm512_shuffle_epi8(tbl, _mm512_and_si512(z, nib));
  }
  const __m128i s8 = iq4_xs_scales8(wb);  // bytes 0-7: the 8 scales of 32-element sub-blocks
  const __m512i s32 = _mm512_cvtepi8_epi32(s8);
  for (int c = 0; c < 4; ++c) o->sc[c] = _mm512_permutexvar_epi32(idx[c], s32);
  o->s16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
}

// Q2_K without the AVX2 unpack: the 32 bytes of qs[32h..] broadcast to both halves of a zmm and
// shifted by 2g (low half) and 2g + 2 (high half) give elements 128h + 32g .. +63 at once (one
// core from L3: 8.9-10.2 -> 11.2 GB/s; the same for Q3_K's third bit measured no gain).
inline __m512i k16_bytes_x2(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline void k16_decode_scales(__m128i s8, K16DecodeBlock* o) {
  const __m512i idx[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7),
      _mm512_setr_epi32(8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11),
      _mm512_setr_epi32(12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15)};
  const __m512i s32 = _mm512_cvtepi8_epi32(s8);
  for (int c = 0; c < 4; ++c) o->sc[c] = _mm512_permutexvar_epi32(idx[c], s32);
}

template <>
inline void k16_decode_unpack(const BlockQ2_K& wb, K16DecodeBlock* o) {
  const __m512i three = _mm512_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m512i q = k16_bytes_x2(wb.qs + 32 * h);
    for (int j = 0; j < 2; ++j) {
      const __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16(int16_t(4 * j)),
                                            _mm256_set1_epi16(int16_t(4 * j + 2)), 1);
      o->q[2 * h + j] = _mm512_and_si512(_mm512_srlv_epi16(q, sh), three);
    }
  }
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
  const __m128i nib = _mm_set1_epi8(15);
  k16_decode_scales(_mm_and_si128(s, nib), o);
  o->s16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), nib));
}

template <typename Block, int NT>
void k16_rows_decode(const uint8_t* w, size_t w_row_bytes, const ActQ8K* xq, size_t nb,
                     size_t n_rows, float* y, size_t ldy) {
  using Tr = K16Traits<Block>;
  K16DecodeBlock u;
  for (size_t r = 0; r < n_rows; ++r) {
    const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    __m256 acc[NT], accm[NT];
    for (int t = 0; t < NT; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
    for (size_t b0 = 0; b0 < nb; b0 += 8) {
      const size_t ng = nb - b0 < 8 ? nb - b0 : 8;
      prefetch_ahead<8 * sizeof(Block)>(wr + b0);
      __m256i va[NT][8], vs[NT][8];
      alignas(16) uint16_t dw[8] = {}, dmw[8] = {};
      for (size_t i = 0; i < 8; ++i) {
        if (i >= ng) {
          for (int t = 0; t < NT; ++t) va[t][i] = vs[t][i] = _mm256_setzero_si256();
          continue;
        }
        const Block& wb = wr[b0 + i];
        dw[i] = wb.d;
        if constexpr (Tr::kMins) dmw[i] = wb.dmin;
        k16_decode_unpack(wb, &u);
        for (int t = 0; t < NT; ++t) {
          const ActQ8K& xb = xq[size_t(t) * nb + b0 + i];
          __m512i a = _mm512_setzero_si512();
          for (int c = 0; c < 4; ++c) {
            const __m512i xv = _mm512_loadu_si512(xb.qs + 64 * c);
            a = _mm512_add_epi32(
                a, _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[c], xv),
                                      u.sc[c]));
          }
          va[t][i] = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums));
          vs[t][i] = _mm256_madd_epi16(u.s16, bs);  // pairs <= 2 * 32 * 2032: exact
        }
      }
      const __mmask8 live = __mmask8((1u << ng) - 1);
      const __m256 dwv = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dw)));
      const __m256 dmwv = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dmw)));
      for (int t = 0; t < NT; ++t) {
        alignas(32) float dx[8] = {};
        for (size_t i = 0; i < ng; ++i) dx[i] = xq[size_t(t) * nb + b0 + i].d;
        const __m256 dxv = _mm256_load_ps(dx);
        __m256i ia = sum8x8_epi32(va[t]);
        const __m256i is = sum8x8_epi32(vs[t]);
        if constexpr (Tr::kMins) {
          accm[t] = _mm256_mask3_fmadd_ps(_mm256_mul_ps(dmwv, dxv), _mm256_cvtepi32_ps(is), accm[t],
                                          live);
        } else if constexpr (Tr::kOff != 0) {  // A = sum of u * x terms - kOff * S (exact)
          ia = _mm256_sub_epi32(ia, _mm256_mullo_epi32(is, _mm256_set1_epi32(Tr::kOff)));
        }
        acc[t] =
            _mm256_mask3_fmadd_ps(_mm256_mul_ps(dwv, dxv), _mm256_cvtepi32_ps(ia), acc[t], live);
      }
    }
    for (int t = 0; t < NT; ++t) {
      alignas(32) float a[8], m[8];
      _mm256_store_ps(a, acc[t]);
      const float s = reduce8_scalar(a);
      if constexpr (Tr::kMins) {
        _mm256_store_ps(m, accm[t]);
        y[size_t(t) * ldy + r] = s - reduce8_scalar(m);
      } else {
        y[size_t(t) * ldy + r] = s;
      }
    }
  }
}

template <typename Block>
void gemm_k16_decode_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                            size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  size_t t = 0;
  for (; t + 2 <= n_tok; t += 2)
    k16_rows_decode<Block, 2>(w, w_row_bytes, xq + t * nb, nb, n_rows, y + t * ldy, ldy);
  if (t < n_tok)
    k16_rows_decode<Block, 1>(w, w_row_bytes, xq + t * nb, nb, n_rows, y + t * ldy, ldy);
}

// ---- batched: register tiles over repacked groups of 8 blocks ----------------------------------

struct K16GroupW {
  __m256i q[64];   // q[8c + k] lane i: u quants 4k..4k+3 of chunk c (32) of block i
  __m256i sc[16];  // sc[j] lane i: scale of sub-block j (of kSub elements) of block i (int32)
  __m256i m[8];    // Q2_K: m[p] lane i: the int16 pair (min 2p, min 2p+1) of block i
  __m256 d, dmin;
};
struct K16GroupX {
  __m256i q[64];
  __m256i corr[16];  // corr[j] lane i: -kOff * (the sum of sub-block j's quants) of block i
  __m256i bs[8];     // Q2_K: bs[p] lane i: the int16 pair (bsums[2p], bsums[2p+1]) of block i
  __m256 d;
};

template <typename Block>
void repack_w_k16(const Block* w, size_t nb, K16GroupW* out) {
  using Tr = K16Traits<Block>;
  K16Unpacked u;
  for (size_t g = 0; g * 8 < nb; ++g) {
    __m256i chunk[8][8];  // [c][i]
    alignas(32) int32_t sc[16][8];
    alignas(32) int16_t m[8][8][2];
    alignas(16) uint16_t d[8], dm[8];
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      if (b >= nb) {
        for (int c = 0; c < 8; ++c) chunk[c][i] = _mm256_setzero_si256();
        for (int j = 0; j < 16; ++j) sc[j][i] = m[j / 2][i][j % 2] = 0;
        d[i] = dm[i] = 0;
        continue;
      }
      k16_unpack(w[b], &u);
      for (int c = 0; c < 8; ++c) chunk[c][i] = u.u[c];
      alignas(16) int8_t s8[16];
      alignas(16) uint8_t m8[16] = {};
      _mm_store_si128(reinterpret_cast<__m128i*>(s8), u.sc);
      if constexpr (Tr::kMins) _mm_store_si128(reinterpret_cast<__m128i*>(m8), u.m);
      for (int j = 0; j < 16; ++j) {  // IQ4_XS: scale j of 32 elements is s8[2j] (= s8[2j+1])
        sc[j][i] = Tr::kSub == 32 ? (j < 8 ? s8[2 * j] : 0) : s8[j];
        m[j / 2][i][j % 2] = int16_t(m8[j]);
      }
      d[i] = w[b].d;
      if constexpr (Tr::kMins)
        dm[i] = w[b].dmin;
      else
        dm[i] = 0;
    }
    for (int c = 0; c < 8; ++c) {
      transpose8x8_epi32(chunk[c]);
      for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[8 * c + k], chunk[c][k]);
    }
    for (int j = 0; j < 16; ++j)
      out[g].sc[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc[j]));
    for (int p = 0; p < 8; ++p)
      out[g].m[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(m[p]));
    out[g].d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
    out[g].dmin = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dm)));
  }
}

template <int kOff, int kSub>
void repack_act_k16(const ActQ8K* x, size_t nb, K16GroupX* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    alignas(32) int32_t corr[16][8];
    alignas(32) int16_t bs[8][8][2];
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
      for (int j = 0; j < 16; ++j) {
        const int32_t s = b < nb ? int32_t(x[b].bsums[j]) : 0;
        bs[j / 2][i][j % 2] = int16_t(s);
        if (kSub == 16)
          corr[j][i] = -kOff * s;
        else if (j % 2 == 0)
          corr[j / 2][i] = -kOff * (s + (b < nb ? int32_t(x[b].bsums[j + 1]) : 0));
      }
      if (kSub == 32)
        for (int j = 8; j < 16; ++j) corr[j][i] = 0;
    }
    for (int j = 0; j < 16; ++j)
      out[g].corr[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(corr[j]));
    for (int p = 0; p < 8; ++p)
      out[g].bs[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(bs[p]));
    out[g].d = _mm256_load_ps(d);
  }
}

template <bool kMins, int kSub, int R, int T>
void k16_tile(const K16GroupW* const* w, const K16GroupX* const* x, size_t ng, float* y,
              size_t ldy) {
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
    for (int j = 0; j < 256 / kSub; ++j) {
      __m256i s[R][T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i c = _mm256_load_si256(&x[t][g].corr[j]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) s[r][t] = c;
      }
#pragma GCC unroll 8
      for (int k = 0; k < kSub / 4; ++k) {
        __m256i wv[R], xv[T];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) wv[r] = _mm256_load_si256(&w[r][g].q[kSub / 4 * j + k]);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_load_si256(&x[t][g].q[kSub / 4 * j + k]);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int t = 0; t < T; ++t) s[r][t] = _mm256_dpbusd_epi32(s[r][t], wv[r], xv[t]);
      }
      // Sub-block sums (|.| <= 32 * 241 * 127 + 128 * 4064) times scales (|s| <= 32): exact.
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
        const __m256 xd = x[t][g].d;
        acc[r][t] =
            _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].d, xd), _mm256_cvtepi32_ps(a[r][t]), acc[r][t]);
        if constexpr (kMins) {
          __m256i b = _mm256_setzero_si256();
          for (int p = 0; p < 8; ++p) b = _mm256_dpwssd_epi32(b, w[r][g].m[p], x[t][g].bs[p]);
          accm[r][t] =
              _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].dmin, xd), _mm256_cvtepi32_ps(b), accm[r][t]);
        }
      }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const float s = reduce8(acc[r][t]);
      y[size_t(t) * ldy + size_t(r)] = kMins ? s - reduce8(accm[r][t]) : s;
    }
}

template <bool kMins, int kSub>
struct K16TileOf {
  template <int R, int T>
  struct Tile {
    static void run(const K16GroupW* const* w, const K16GroupX* const* x, size_t ng, float* y,
                    size_t ldy) {
      k16_tile<kMins, kSub, R, T>(w, x, ng, y, ldy);
    }
  };
};

template <typename Block, int R = 4, int T = 3>
void gemm_k16_vnni(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                   size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  using Tr = K16Traits<Block>;
  const size_t nb = n_cols / kSuperBlock, ng = (nb + 7) / 8;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  gemm_tiled<R, T, K16TileOf<Tr::kMins, Tr::kSub>::template Tile, K16GroupW, K16GroupX>(
      w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
      [&](size_t r, K16GroupW* out) {
        repack_w_k16(reinterpret_cast<const Block*>(w + r * w_row_bytes), nb, out);
      },
      [&](size_t t, K16GroupX* out) { repack_act_k16<Tr::kOff, Tr::kSub>(xq + t * nb, nb, out); });
}

// The avx512 set's entry: decode kernels below kVnniMinTokK16 tokens, tiles above; same bits.
template <typename Block>
void gemm_k16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                     size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= kVnniMinTokK16 && n_cols >= size_t(kSuperBlock))
    gemm_k16_vnni<Block>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    gemm_k16_decode_avx512<Block>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

}  // namespace
}  // namespace tzero::x86
