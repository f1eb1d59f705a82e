// The x86 kernel bodies, written once as templates over an ISA policy P that supplies the hot
// inner pieces (P::dot16 for float weights, P::q8_partial for int8 blocks). avx2.cpp and
// avx512.cpp instantiate them with their policies. Everything here has internal linkage.
#pragma once

#include <cmath>
#include <vector>

#include "kernels/quant_k.h"
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/avx2_common.h"
#include "kernels/x86/gemm_k16.h"
#include "kernels/x86/gemm_legacy.h"

namespace tzero::x86 {
namespace {

// Decode-sized batches (avx2.cpp and avx512.cpp send larger ones to the tiled gemm of
// gemm_float.h): P::dot16_rows over for_row_streams' side-by-side rows, per token; the first
// token's pass prefetches the rows' streams.
template <typename P, typename W, bool BF16 = false>
void gemm_float(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                size_t n_tok, float* y, size_t ldy) {
  const float* xf = static_cast<const float*>(x);
  for_row_streams(n_rows, [&](auto count, const size_t* rows) {
    constexpr size_t S = decltype(count)::value;
    const W* wr[S];
    for (size_t k = 0; k < S; ++k) wr[k] = reinterpret_cast<const W*>(w + rows[k] * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t) {
      float out[S];
      if (t == 0)
        P::template dot16_rows<S, true>(wr, xf, n_cols, BF16, out);
      else
        P::template dot16_rows<S, false>(wr, xf + t * n_cols, n_cols, BF16, out);
      for (size_t k = 0; k < S; ++k) y[t * ldy + rows[k]] = out[k];
    }
  });
}

constexpr size_t kTokTile = 64;  // tokens whose accumulators live on the stack at once

// Canonical quantized gemm (dot-v1): exact int32 block sums, p = d_w * d_x, 8 block lanes,
// then the 8-lane tree. A group of 8 weight blocks is loaded and unpacked once and reused for
// every token of the batch; each (row, token) element keeps its own accumulator, so its order
// is the same as for a single token. The activations' scales (and for Q4_0 their block sums)
// are gathered once per call into arrays, so a block group reads its 8 scales with one load.
// Q4_0 multiplies the unsigned nibbles (0..15) with x and subtracts 8 * sum(x) afterwards:
// sum((q - 8) * x) exactly, without the sign trick Q8_0's signed weights need.
template <typename P, typename Block>
void gemm_q(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
            size_t n_tok, float* y, size_t ldy) {
  constexpr bool kQ4 = sizeof(Block) == sizeof(BlockQ4_0);
  const size_t nb = n_cols / kQBlock, nb8 = (nb + 7) / 8 * 8;
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  __m256 acc[kTokTile];
  __m256i wq[8], aw[8];
  thread_local std::vector<float> dx_all;    // (kTokTile, nb8) activation scales, 0 past nb
  thread_local std::vector<int32_t> xs_all;  // (kTokTile, nb8) Q4_0: 8 * sum of x_q per block
  const __m256i nib = _mm256_set1_epi8(15);
  for (size_t t0 = 0; t0 < n_tok; t0 += kTokTile) {
    const size_t nt = n_tok - t0 < kTokTile ? n_tok - t0 : kTokTile;
    dx_all.assign(nt * nb8, 0.0f);
    if (kQ4) xs_all.assign(nt * nb8, 0);
    for (size_t t = 0; t < nt; ++t)
      for (size_t b = 0; b < nb; ++b) {
        const ActQ8& xb = xq[(t0 + t) * nb + b];
        dx_all[t * nb8 + b] = xb.d;
        if (kQ4) {
          int32_t sum = 0;
          for (int i = 0; i < kQBlock; ++i) sum += xb.qs[i];
          xs_all[t * nb8 + b] = 8 * sum;
        }
      }
    for (size_t r = 0; r < n_rows; ++r) {
      const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
      for (size_t t = 0; t < nt; ++t) acc[t] = _mm256_setzero_ps();
      for (size_t b0 = 0; b0 < nb; b0 += 8) {
        const size_t m = nb - b0 < 8 ? nb - b0 : 8;
        prefetch_ahead<8 * sizeof(Block)>(wr + b0);
        __m128i dh = _mm_setzero_si128();  // built in registers: no store-forwarding stall
        for (size_t j = 0; j < m; ++j) {
          const Block& wb = wr[b0 + j];
          if constexpr (kQ4) {
            const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.qs));
            wq[j] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q),
                                     nib);  // elements 0..15 | 16..31
          } else {
            wq[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs));
            aw[j] = _mm256_sign_epi8(wq[j], wq[j]);
          }
          dh = insert_u16(dh, wb.d, j);
        }
        const __m256 dw = _mm256_cvtph_ps(dh);
        for (size_t t = 0; t < nt; ++t) {
          const ActQ8* xb = xq + (t0 + t) * nb + b0;
          __m256i part[8];
          for (size_t j = 0; j < 8; ++j) {
            if (j >= m) {
              part[j] = _mm256_setzero_si256();
              continue;
            }
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[j].qs));
            if constexpr (kQ4)
              part[j] = P::q8_partial(wq[j], xv);
            else
              part[j] = P::q8_partial(aw[j], _mm256_sign_epi8(xv, wq[j]));
          }
          __m256i isum = hsum8x8(part);
          if constexpr (kQ4)
            isum = _mm256_sub_epi32(
                isum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&xs_all[t * nb8 + b0])));
          // p = d_w * d_x (one rounding, as the reference); missing blocks have p = 0, isum = 0.
          const __m256 p = _mm256_mul_ps(dw, _mm256_loadu_ps(&dx_all[t * nb8 + b0]));
          acc[t] = _mm256_fmadd_ps(p, _mm256_cvtepi32_ps(isum), acc[t]);
        }
      }
      for (size_t t = 0; t < nt; ++t) y[(t0 + t) * ldy + r] = reduce8(acc[t]);
    }
  }
}

// A Q4_K super-block unpacked once and reused for every token of a batch.
struct Q4KUnpacked {
  __m256i lo[4], hi[4];  // quants of sub-blocks 2c and 2c+1, one byte each (0..15)
  __m256i sc[8];         // sub-block scale j broadcast to int16 lanes
  __m128i m16;           // the eight mins as int16
};

// The scales and mins of a Q4_K or Q5_K block (the same 12-byte packing).
inline void k_scales_x86(const uint8_t* scales, Q4KUnpacked* u) {
  uint32_t s[3];
  std::memcpy(s, scales, 12);
  const uint32_t sc_lo = s[0] & 0x3f3f3f3fu, m_lo = s[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (s[2] & 0x0f0f0f0fu) | (((s[0] >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((s[2] >> 4) & 0x0f0f0f0fu) | (((s[1] >> 6) & 0x03030303u) << 4);
  const uint64_t sc = uint64_t(sc_lo) | uint64_t(sc_hi) << 32;
  const uint64_t m = uint64_t(m_lo) | uint64_t(m_hi) << 32;
  for (int j = 0; j < 8; ++j) u->sc[j] = _mm256_set1_epi16(int16_t((sc >> (8 * j)) & 0xff));
  u->m16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(m)));
}

inline void q4_k_unpack_x86(const BlockQ4_K& w, Q4KUnpacked* u) {
  k_scales_x86(w.scales, u);
  const __m256i nib = _mm256_set1_epi8(15);
  for (int c = 0; c < 4; ++c) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * c));
    u->lo[c] = _mm256_and_si256(q, nib);
    u->hi[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
  }
}

// Q5_K: Q4_K's nibbles plus 16 times bit 2c (low-nibble half) or 2c+1 (high half) of qh[l].
inline void q5_k_unpack_x86(const BlockQ5_K& w, Q4KUnpacked* u) {
  k_scales_x86(w.scales, u);
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh));
  for (int c = 0; c < 4; ++c) {
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * c));
    const __m256i nib = _mm256_set1_epi8(15);
    // Bit k of each byte to bit 4 of it (16-bit shifts: bit 0 of each byte after the
    // right shift came from that byte).
    const __m256i lo = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one), 4);
    const __m256i hi =
        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one), 4);
    u->lo[c] = _mm256_or_si256(_mm256_and_si256(qs, nib), lo);
    u->hi[c] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), nib), hi);
  }
}

// dot_q4_k_ref's (and dot_q5_k_ref's) exact integers A and B of one super-block (kernels/dot.h).
inline void q4_k_ints(const Q4KUnpacked& u, const ActQ8K& x, int32_t* a, int32_t* b) {
  __m256i acc = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 64 * c));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 64 * c + 32));
    // Pair sums of u5 * s8 fit int16 (<= 2 * 31 * 127); times the 6-bit scale fit int32.
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u.lo[c], x0), u.sc[2 * c]));
    acc = _mm256_add_epi32(acc,
                           _mm256_madd_epi16(_mm256_maddubs_epi16(u.hi[c], x1), u.sc[2 * c + 1]));
  }
  *a = hsum_i32(acc);
  // B = sum of m[j] * (bsums[2j] + bsums[2j+1]); pair sums fit int16 (<= 32 * 127).
  const __m128i bs0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.bsums));
  const __m128i bs1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.bsums + 8));
  const __m128i pairs = _mm_hadd_epi16(bs0, bs1);
  __m128i s = _mm_madd_epi16(pairs, u.m16);
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  *b = _mm_cvtsi128_si32(s);
}

// dot_q6_k_ref's exact integer A of one super-block: sum of scale * (q - 32) * x, computed as
// scale * q * x (q unsigned 0..63) minus 32 * scale * bsum.
inline int32_t q6_k_int(const BlockQ6_K& w, const ActQ8K& x) {
  const __m256i nib = _mm256_set1_epi8(15), two = _mm256_set1_epi8(3);
  __m256i acc = _mm256_setzero_si256();
  for (int h = 0; h < 2; ++h) {
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
    for (int g = 0; g < 4; ++g) {
      const __m256i ql =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h + 32 * (g & 1)));
      const __m256i low4 =
          g < 2 ? _mm256_and_si256(ql, nib) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), nib);
      const __m256i high2 =
          _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), two);  // bits 2g, 2g+1 of each byte
      const __m256i q = _mm256_or_si256(low4, _mm256_slli_epi16(high2, 4));
      const __m256i xv =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 128 * h + 32 * g));
      const int i0 = 8 * h + 2 * g;  // sub-blocks i0 (bytes 0-15) and i0 + 1 (bytes 16-31)
      const __m256i sc =
          _mm256_setr_m128i(_mm_set1_epi16(w.scales[i0]), _mm_set1_epi16(w.scales[i0 + 1]));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), sc));
    }
  }
  int32_t corr = 0;
  for (int i = 0; i < 16; ++i) corr += int32_t(w.scales[i]) * int32_t(x.bsums[i]);
  return hsum_i32(acc) - 32 * corr;
}

inline float reduce8_scalar(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

inline float dot_q6_k_x86(const BlockQ6_K* w, const ActQ8K* x, size_t nb) {
  float acc[8] = {};
  for (size_t b = 0; b < nb; ++b) {
    const float p = _cvtsh_ss(w[b].d) * x[b].d;
    acc[b % 8] = std::fma(p, float(q6_k_int(w[b], x[b])), acc[b % 8]);
  }
  return reduce8_scalar(acc);
}

// Q4_K gemm: each weight super-block is unpacked once per row and reused for every token; each
// (row, token) element still accumulates its blocks in the canonical lanes and order.
// Q4_K or Q5_K (Block, Unpack) weights, the unpacked quants reused for every token.
template <typename Block, void (*Unpack)(const Block&, Q4KUnpacked*)>
void gemm_k4_x86(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                 size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  float acc[kTokTile][8], accm[kTokTile][8];
  Q4KUnpacked u;
  for (size_t t0 = 0; t0 < n_tok; t0 += kTokTile) {
    const size_t nt = n_tok - t0 < kTokTile ? n_tok - t0 : kTokTile;
    for (size_t r = 0; r < n_rows; ++r) {
      const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
      std::memset(acc, 0, nt * sizeof acc[0]);
      std::memset(accm, 0, nt * sizeof accm[0]);
      for (size_t b = 0; b < nb; ++b) {
        prefetch_ahead<sizeof(Block)>(wr + b);
        Unpack(wr[b], &u);
        const float dw = _cvtsh_ss(wr[b].d), dmw = _cvtsh_ss(wr[b].dmin);
        for (size_t t = 0; t < nt; ++t) {
          const ActQ8K& xb = xq[(t0 + t) * nb + b];
          int32_t a, m;
          q4_k_ints(u, xb, &a, &m);
          acc[t][b % 8] = std::fma(dw * xb.d, float(a), acc[t][b % 8]);
          accm[t][b % 8] = std::fma(dmw * xb.d, float(m), accm[t][b % 8]);
        }
      }
      for (size_t t = 0; t < nt; ++t) {
        const float s = reduce8_scalar(acc[t]);
        y[(t0 + t) * ldy + r] = s - reduce8_scalar(accm[t]);
      }
    }
  }
}

template <typename Block, float (*Dot)(const Block*, const ActQ8K*, size_t)>
void gemm_k(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
            size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kSuperBlock;
  const ActQ8K* xq = static_cast<const ActQ8K*>(x);
  for (size_t r = 0; r < n_rows; ++r) {
    const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    for (size_t b = 0; b < nb; ++b) prefetch_ahead<sizeof(Block)>(wr + b);
    for (size_t t = 0; t < n_tok; ++t) y[t * ldy + r] = Dot(wr, xq + t * nb, nb);
  }
}

// 32 floats times id, rounded half to even, packed to int8 in order.
inline void quantize32(const float* x, __m256 idv, int8_t* dst) {
  __m256i q[4];
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), idv));
  const __m256i a = _mm256_packs_epi32(q[0], q[1]), b = _mm256_packs_epi32(q[2], q[3]);
  __m256i c = _mm256_packs_epi16(a, b);
  c = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), c);
}

inline float amax_n(const float* x, size_t n) {  // n a multiple of 8
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 mx = _mm256_setzero_ps();
  for (size_t i = 0; i < n; i += 8)
    mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  return _mm_cvtss_f32(m4);
}

void quantize_act_q8k_x86(const float* x, ActQ8K* dst, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float* xb = x + b * kSuperBlock;
    const float d = amax_n(xb, kSuperBlock) / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = d;
    const __m256 idv = _mm256_set1_ps(id);
    for (int c = 0; c < 8; ++c) quantize32(xb + 32 * c, idv, dst[b].qs + 32 * c);
    for (int g = 0; g < 16; ++g) {
      const __m128i v =
          _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(dst[b].qs + 16 * g)));
      const __m128i v2 = _mm_cvtepi8_epi16(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(dst[b].qs + 16 * g + 8)));
      __m128i s = _mm_madd_epi16(_mm_add_epi16(v, v2), _mm_set1_epi16(1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
      dst[b].bsums[g] = int16_t(_mm_cvtsi128_si32(s));
    }
  }
}

// quantize_act_q8: amax, d = amax / 127, id = 1 / d, q = round-half-even(x * id).
void quantize_act_q8_x86(const float* x, ActQ8* dst, size_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (size_t k = 0; k < n / kQBlock; ++k) {
    const float* xb = x + k * kQBlock;
    __m256 v[4];
    __m256 mx = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(xb + 8 * i);
      mx = _mm256_max_ps(mx, _mm256_and_ps(v[i], abs_mask));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[k].d = d;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], idv));
    // Pack 4 x 8 int32 to 32 int8 and undo the per-128-bit-lane interleave of the packs.
    const __m256i a = _mm256_packs_epi32(q[0], q[1]), b = _mm256_packs_epi32(q[2], q[3]);
    __m256i c = _mm256_packs_epi16(a, b);
    c = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst[k].qs), c);
  }
}

template <typename P>
float dot_f32_x86(const float* a, const float* b, size_t n) {
  return P::dot16(a, b, n, false);
}

template <typename P>
void rmsnorm_x86(const float* x, const float* w, float eps, size_t n, float* out) {
  const float ss = P::dot16(x, x, n, false);
  const float mean = ss / float(n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
  for (; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

// out = glu8(gate, up) in eight-lane steps; the tail padded with zeros.
template <__m256 (*Glu8)(__m256, __m256)>
void glu_x86(const float* gate, const float* up, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, Glu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    float g[8] = {}, u[8] = {};
    std::memcpy(g, gate + i, (n - i) * sizeof(float));
    std::memcpy(u, up + i, (n - i) * sizeof(float));
    _mm256_storeu_ps(g, Glu8(_mm256_loadu_ps(g), _mm256_loadu_ps(u)));
    std::memcpy(out + i, g, (n - i) * sizeof(float));
  }
}

template <typename P>
KernelSet make_kernel_set(const char* name) {
  return KernelSet{
      name,
      gemm_float<P, float>,
      gemm_float<P, uint16_t, false>,
      gemm_float<P, uint16_t, true>,
      gemm_q<P, BlockQ8_0>,
      gemm_q<P, BlockQ4_0>,
      gemm_k4_x86<BlockQ4_K, q4_k_unpack_x86>,
      gemm_k4_x86<BlockQ5_K, q5_k_unpack_x86>,
      gemm_k<BlockQ6_K, dot_q6_k_x86>,
      gemm_q32<P, Q4_1Unpack>,
      gemm_q32<P, Q5_0Unpack>,
      gemm_q32<P, Q5_1Unpack>,
      gemm_q32<P, IQ4_NLUnpack>,
      gemm_q32<P, MXFP4Unpack>,
      gemm_k16_x86<BlockQ2_K>,
      gemm_k16_x86<BlockQ3_K>,
      gemm_k16_x86<BlockIQ4_XS>,
      quantize_act_q8_x86,
      quantize_act_q8k_x86,
      dot_f32_x86<P>,
      rmsnorm_x86<P>,
      attn_scores_x86<P>,
      attn_block_avx2,
      glu_x86<swiglu8>,
      glu_x86<geglu8>,
  };
}

}  // namespace
}  // namespace tzero::x86
