// IQ4_XS, Q3_K and Q2_K for the x86 kernels: one unpacked shape for the three formats, and the
// AVX2-level gemm over it (the avx2 set; kernels_impl.h). The avx512 set's decode and batched
// kernels (gemm_k16_avx512.h) start from the same unpacked blocks.
//
// Unpacked block: 256 unsigned quants u in 8 registers of 32 (element order), the integer weight
// of the format being u - kOff (IQ4_XS u = kIQ4NLValues[q] + 128, Q3_K u = q2 + 4 * hbit, Q2_K
// u = q), 16 signed scales of 16-element sub-blocks (IQ4_XS: each 32-element scale twice) and,
// for Q2_K, 16 mins. The exact integers of dot.h follow: A = sum over sub-blocks i of s[i] *
// (sum of (u - kOff) * x_q over i), B = sum of m[i] * bsums[i].
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

template <typename Block>
struct K16Traits;
template <>
struct K16Traits<BlockIQ4_XS> {
  static constexpr int kOff = 128;
  static constexpr bool kMins = false;
  static constexpr int kSub = 32;  // elements per scale
};
template <>
struct K16Traits<BlockQ3_K> {
  static constexpr int kOff = 4;
  static constexpr bool kMins = false;
  static constexpr int kSub = 16;
};
template <>
struct K16Traits<BlockQ2_K> {
  static constexpr int kOff = 0;
  static constexpr bool kMins = true;
  static constexpr int kSub = 16;
};

struct K16Unpacked {
  __m256i u[8];  // elements 32c .. 32c+31
  __m128i sc;    // 16 int8 scales
  __m128i m;     // Q2_K: 16 mins (0..15); unset for the others
};

// The 8 scales ls[j] - 32 of an IQ4_XS block as int8 in bytes 0-7 (bytes 8-15 zero - 32).
inline __m128i iq4_xs_scales8(const BlockIQ4_XS& b) {
  uint32_t sl;
  std::memcpy(&sl, b.scales_l, 4);
  const __m128i v = _mm_cvtsi32_si128(int(sl)), nib = _mm_set1_epi8(15);
  // Byte j: nibble j of scales_l (the low nibble of byte j/2 for even j, the high one for odd).
  const __m128i lo =
      _mm_unpacklo_epi8(_mm_and_si128(v, nib), _mm_and_si128(_mm_srli_epi16(v, 4), nib));
  // Int16 lane j: bits 2j, 2j+1 of scales_h, moved to the top of the lane, then down to 0..3.
  const __m128i top =
      _mm_mullo_epi16(_mm_set1_epi16(int16_t(b.scales_h)),
                      _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1));
  const __m128i hi = _mm_packus_epi16(_mm_srli_epi16(top, 14), _mm_setzero_si128());
  return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

inline void k16_unpack(const BlockIQ4_XS& b, K16Unpacked* out) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues));
  const __m256i tbl = _mm256_broadcastsi128_si256(_mm_xor_si128(t, _mm_set1_epi8(char(0x80))));
  const __m256i nib = _mm256_set1_epi8(15);
  for (int k = 0; k < 4; ++k) {  // bytes 0-15: sub-block 2k, 16-31: 2k+1 (low nibbles first)
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * k));
    const __m256i lo = _mm256_and_si256(q, nib);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
    out->u[2 * k] = _mm256_shuffle_epi8(tbl, _mm256_permute2x128_si256(lo, hi, 0x20));
    out->u[2 * k + 1] = _mm256_shuffle_epi8(tbl, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
  const __m128i v = iq4_xs_scales8(b);
  out->sc = _mm_unpacklo_epi8(v, v);  // sub-block j of 32 is 16-element sub-blocks 2j, 2j+1
}

inline void k16_unpack(const BlockQ3_K& b, K16Unpacked* out) {
  const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
  for (int h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h));
    for (int g = 0; g < 4; ++g) {
      const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(q, 2 * g), three);
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + g), one);
      out->u[4 * h + g] = _mm256_or_si256(q2, _mm256_slli_epi16(hb, 2));
    }
  }
  const __m128i x8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales));
  const __m128i nib = _mm_set1_epi8(15);
  const __m128i low =
      _mm_unpacklo_epi64(_mm_and_si128(x8, nib), _mm_and_si128(_mm_srli_epi16(x8, 4), nib));
  uint32_t t;
  std::memcpy(&t, b.scales + 8, 4);
  const uint32_t m2 = 0x03030303u;
  const __m128i high =
      _mm_setr_epi32(int(t & m2), int((t >> 2) & m2), int((t >> 4) & m2), int((t >> 6) & m2));
  out->sc = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

inline void k16_unpack(const BlockQ2_K& b, K16Unpacked* out) {
  const __m256i three = _mm256_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h));
    for (int g = 0; g < 4; ++g)
      out->u[4 * h + g] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * g), three);
  }
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  const __m128i nib = _mm_set1_epi8(15);
  out->sc = _mm_and_si128(s, nib);
  out->m = _mm_and_si128(_mm_srli_epi16(s, 4), nib);
}

// The weights w = u - kOff (signed), |w| and the int16 scale vectors of an unpacked block,
// ready for every token.
struct K16Signed {
  __m256i w[8], aw[8];
  __m256i sc[8];  // register c: int16 lanes 0-7 scale of sub-block 2c, lanes 8-15 of 2c+1
  __m256i m16;    // Q2_K: the 16 mins as int16
};

template <int kOff>
inline void k16_signed(const K16Unpacked& u, K16Signed* s) {
  for (int c = 0; c < 8; ++c) {
    s->w[c] = kOff ? _mm256_sub_epi8(u.u[c], _mm256_set1_epi8(char(kOff))) : u.u[c];
    s->aw[c] = _mm256_sign_epi8(s->w[c], s->w[c]);
  }
  alignas(16) int8_t sc[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(sc), u.sc);
  for (int c = 0; c < 8; ++c)
    s->sc[c] = _mm256_setr_m128i(_mm_set1_epi16(sc[2 * c]), _mm_set1_epi16(sc[2 * c + 1]));
  s->m16 = _mm256_cvtepu8_epi16(u.m);
}

// A (and B) of one block with one token: |w| * sign(x, w) pairs fit int16 (<= 2 * 127 * 127),
// times the scales (|s| <= 32) fit int32; exact.
inline int32_t k16_int_a(const K16Signed& s, const ActQ8K& x) {
  __m256i acc = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * c));
    acc = _mm256_add_epi32(
        acc,
        _mm256_madd_epi16(_mm256_maddubs_epi16(s.aw[c], _mm256_sign_epi8(xv, s.w[c])), s.sc[c]));
  }
  return hsum_i32(acc);
}
inline int32_t k16_int_b(const K16Signed& s, const ActQ8K& x) {
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  return hsum_i32(_mm256_madd_epi16(s.m16, bs));
}

inline float reduce8_k16(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

// The AVX2 gemm: each weight block unpacked once per row and reused for up to 64 tokens; each
// (row, token) element accumulates its blocks in dot.h's lanes and order (Q2_K with accm).
template <typename Block>
void gemm_k16_x86(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                  size_t n_tok, float* y, size_t ldy) {
  using Tr = K16Traits<Block>;
  constexpr size_t kTile = 64;
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  float acc[kTile][8], accm[kTile][8];
  K16Unpacked u;
  K16Signed s;
  for (size_t t0 = 0; t0 < n_tok; t0 += kTile) {
    const size_t nt = n_tok - t0 < kTile ? n_tok - t0 : kTile;
    for (size_t r = 0; r < n_rows; ++r) {
      const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
      std::memset(acc, 0, nt * sizeof acc[0]);
      std::memset(accm, 0, nt * sizeof accm[0]);
      for (size_t b = 0; b < nb; ++b) {
        prefetch_ahead<sizeof(Block)>(wr + b);
        k16_unpack(wr[b], &u);
        k16_signed<Tr::kOff>(u, &s);
        const float dw = _cvtsh_ss(wr[b].d);
        for (size_t t = 0; t < nt; ++t) {
          const ActQ8K& xb = xq[(t0 + t) * nb + b];
          acc[t][b % 8] = std::fma(dw * xb.d, float(k16_int_a(s, xb)), acc[t][b % 8]);
          if constexpr (Tr::kMins) {
            const float dmw = _cvtsh_ss(wr[b].dmin);
            accm[t][b % 8] = std::fma(dmw * xb.d, float(k16_int_b(s, xb)), accm[t][b % 8]);
          }
        }
      }
      for (size_t t = 0; t < nt; ++t) {
        const float a = reduce8_k16(acc[t]);
        y[(t0 + t) * ldy + r] = Tr::kMins ? a - reduce8_k16(accm[t]) : a;
      }
    }
  }
}

}  // namespace
}  // namespace tzero::x86
