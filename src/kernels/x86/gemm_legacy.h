// x86 gemms of quant_legacy.h's 32-element block types (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4), in
// the canonical orders of dot.h. Every block is unpacked to its 32 integer weights (block_ints,
// one byte each, in element order) and then takes the int8 x int8 block sums of Q8_0: signed
// weights (Q5_0's q - 16, the IQ4_NL and MXFP4 table values) through the sign trick, the
// unsigned q of Q4_1 and Q5_1 directly (their mins add m_w * d_x * sum(x_q) in lanes of their
// own). Included by kernels_impl.h (AVX2 level, templated over the ISA policy P); everything here
// has internal linkage.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/quant.h"
#include "kernels/quant_legacy.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

// Element i < 16 from the low nibble of qs[i], element i + 16 from its high nibble.
inline __m256i nibbles32(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

// 16 in byte i where bit i of qh (a little-endian uint32) is set, else 0.
inline __m256i fifth_bits32(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  // Byte i takes byte i / 8 of h (each 128-bit lane holds a copy of h's four bytes).
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(int32_t(h)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));  // 1 << (i % 8)
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                          _mm256_set1_epi8(16));
}

inline __m256i table16(const int8_t* values) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

// The per-type pieces: Block, whether weights are signed (else unsigned with a min), whether
// d_w (and m_w) are the f16 fields d (and m), the 32 integer weights as bytes in element order,
// d_w (and m_w) as floats.
struct Q4_1Unpack {
  using Block = BlockQ4_1;
  static constexpr bool kMin = true, kF16Scale = true;
  static constexpr TensorType kType = TensorType::Q4_1;
  static __m256i ints(const Block& b) { return nibbles32(b.qs); }
  static float scale(const Block& b) { return _cvtsh_ss(b.d); }
  static float min(const Block& b) { return _cvtsh_ss(b.m); }
};
struct Q5_1Unpack {
  using Block = BlockQ5_1;
  static constexpr bool kMin = true, kF16Scale = true;
  static constexpr TensorType kType = TensorType::Q5_1;
  static __m256i ints(const Block& b) {
    return _mm256_or_si256(nibbles32(b.qs), fifth_bits32(b.qh));
  }
  static float scale(const Block& b) { return _cvtsh_ss(b.d); }
  static float min(const Block& b) { return _cvtsh_ss(b.m); }
};
struct Q5_0Unpack {
  using Block = BlockQ5_0;
  static constexpr bool kMin = false, kF16Scale = true;
  static constexpr TensorType kType = TensorType::Q5_0;
  static __m256i ints(const Block& b) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(b.qs), fifth_bits32(b.qh)),
                           _mm256_set1_epi8(16));
  }
  static float scale(const Block& b) { return _cvtsh_ss(b.d); }
  static float min(const Block&) { return 0.0f; }
};
struct IQ4_NLUnpack {
  using Block = BlockIQ4_NL;
  static constexpr bool kMin = false, kF16Scale = true;
  static constexpr TensorType kType = TensorType::IQ4_NL;
  static __m256i ints(const Block& b) {
    return _mm256_shuffle_epi8(table16(kIq4nlValues), nibbles32(b.qs));
  }
  static float scale(const Block& b) { return _cvtsh_ss(b.d); }
  static float min(const Block&) { return 0.0f; }
};
struct MXFP4Unpack {
  using Block = BlockMXFP4;
  static constexpr bool kMin = false, kF16Scale = false;
  static constexpr TensorType kType = TensorType::MXFP4;
  static __m256i ints(const Block& b) {
    return _mm256_shuffle_epi8(table16(kMxfp4Values), nibbles32(b.qs));
  }
  static float scale(const Block& b) { return e8m0_half_to_float(b.e); }
  static float min(const Block&) { return 0.0f; }
};

constexpr size_t kTokTile32 = 64;  // tokens whose accumulators live on the stack at once

// The canonical gemm of U's type: a group of 8 weight blocks is unpacked once per row and
// reused for every token of the batch; each (row, token) element keeps its own accumulators
// (acc, and accm for the min), so its order is that of a single token. Blocks past the end of
// a group have p = 0 and isum = 0 (accumulators never hold -0, so adding 0 leaves them as is).
// Signed weights use |w| * sign(x, w) (exact: |w| <= 127 and |x| <= 127, ActQ8's invariant).
template <typename P, typename U>
void gemm_q32(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
              size_t n_tok, float* y, size_t ldy) {
  using Block = typename U::Block;
  const size_t nb = n_cols / kQBlock, nb8 = (nb + 7) / 8 * 8;
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  __m256 acc[kTokTile32], accm[kTokTile32];
  __m256i wq[8], aw[8];
  thread_local std::vector<float> dx_all;  // (kTokTile32, nb8) activation scales, 0 past nb
  thread_local std::vector<float> xs_all;  // (kTokTile32, nb8) min types: float(sum of x_q)
  for (size_t t0 = 0; t0 < n_tok; t0 += kTokTile32) {
    const size_t nt = n_tok - t0 < kTokTile32 ? n_tok - t0 : kTokTile32;
    dx_all.assign(nt * nb8, 0.0f);
    if (U::kMin) xs_all.assign(nt * nb8, 0.0f);
    for (size_t t = 0; t < nt; ++t)
      for (size_t b = 0; b < nb; ++b) {
        const ActQ8& xb = xq[(t0 + t) * nb + b];
        dx_all[t * nb8 + b] = xb.d;
        if (U::kMin) {
          int32_t sum = 0;
          for (int i = 0; i < kQBlock; ++i) sum += xb.qs[i];
          xs_all[t * nb8 + b] = float(sum);  // exact: |sum| <= 32 * 127
        }
      }
    for (size_t r = 0; r < n_rows; ++r) {
      const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
      for (size_t t = 0; t < nt; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
      for (size_t b0 = 0; b0 < nb; b0 += 8) {
        const size_t m = nb - b0 < 8 ? nb - b0 : 8;
        prefetch_ahead<8 * sizeof(Block)>(wr + b0);
        // f16 scales (and mins) gathered in registers and widened at once (no store-forwarding
        // stall); MXFP4's E8M0 scales as floats.
        __m128i dh = _mm_setzero_si128(), mh = _mm_setzero_si128();
        float d[8] = {};
        for (size_t j = 0; j < m; ++j) {
          const Block& wb = wr[b0 + j];
          wq[j] = U::ints(wb);
          if constexpr (!U::kMin) aw[j] = _mm256_sign_epi8(wq[j], wq[j]);
          if constexpr (U::kF16Scale) {
            dh = insert_u16(dh, wb.d, j);
            if constexpr (U::kMin) mh = insert_u16(mh, wb.m, j);
          } else {
            d[j] = U::scale(wb);
          }
        }
        const __m256 dw = U::kF16Scale
                              ? _mm256_cvtph_ps(dh)
                              : _mm256_setr_ps(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
        const __m256 mw = _mm256_cvtph_ps(mh);
        for (size_t t = 0; t < nt; ++t) {
          const ActQ8* xb = xq + (t0 + t) * nb + b0;
          __m256i part[8];
          for (size_t j = 0; j < 8; ++j) {
            if (j >= m) {
              part[j] = _mm256_setzero_si256();
              continue;
            }
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb[j].qs));
            if constexpr (U::kMin)
              part[j] = P::q8_partial(wq[j], xv);
            else
              part[j] = P::q8_partial(aw[j], _mm256_sign_epi8(xv, wq[j]));
          }
          const __m256i isum = hsum8x8(part);
          const __m256 dx = _mm256_loadu_ps(&dx_all[t * nb8 + b0]);
          acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(isum), acc[t]);
          if constexpr (U::kMin)
            accm[t] = _mm256_fmadd_ps(_mm256_mul_ps(mw, dx), _mm256_loadu_ps(&xs_all[t * nb8 + b0]),
                                      accm[t]);
        }
      }
      for (size_t t = 0; t < nt; ++t) {
        const float s = reduce8(acc[t]);
        y[(t0 + t) * ldy + r] = U::kMin ? s + reduce8(accm[t]) : s;
      }
    }
  }
}

}  // namespace
}  // namespace tzero::x86
