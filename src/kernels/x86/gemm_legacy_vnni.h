// Batched (prefill) AVX-512 VNNI gemms of quant_legacy.h's 32-element block types, on the
// register tiles and repacked operands of gemm_vnni.h (its header explains the layout). Each
// block is unpacked to its 32 integer weights (gemm_legacy.h) before the 8x8 dword transpose:
//   signed weights (Q5_0, IQ4_NL, MXFP4) as w + 128, with Q8_0's correction (isum = sum (w + 128)
//   x - 128 sum x): Q8_0's tiles and activation groups unchanged;
//   Q4_1 and Q5_1 their unsigned q, with tiles of their own that keep the min's lanes
//   (accm = fma(m_w * d_x, float(sum x), accm)) beside the scale's and add the two trees.
// Included only by avx512.cpp, after gemm_vnni.h.
#pragma once

#include "kernels/x86/gemm_legacy.h"
#include "kernels/x86/gemm_vnni.h"

namespace tzero::x86 {
namespace {

struct QMinGroupW {  // 8 weight blocks of one row, Q4_1 or Q5_1
  __m256i q[8];      // q[k] lane i: unsigned quants 4k..4k+3 of block i
  __m256 d, m;       // block scales and mins (widened from f16)
};

// Signed types (U::kMin false) into Q8_0's groups (w + 128), min types into QMinGroupW.
template <typename U, typename GW>
void repack_w_q32(const typename U::Block* w, size_t nb, GW* out) {
  for (size_t g = 0; g * 8 < nb; ++g) {
    __m256i v[8];
    alignas(32) float d[8], m[8];
    for (size_t i = 0; i < 8; ++i) {
      const size_t b = g * 8 + i;
      if (b >= nb) {
        v[i] = _mm256_setzero_si256();
        d[i] = m[i] = 0.0f;
        continue;
      }
      v[i] = U::ints(w[b]);
      if constexpr (!U::kMin) v[i] = _mm256_xor_si256(v[i], _mm256_set1_epi8(char(0x80)));
      d[i] = U::scale(w[b]);
      m[i] = U::min(w[b]);
    }
    transpose8x8_epi32(v);
    for (int k = 0; k < 8; ++k) _mm256_store_si256(&out[g].q[k], v[k]);
    out[g].d = _mm256_load_ps(d);
    if constexpr (U::kMin) out[g].m = _mm256_load_ps(m);
  }
}

// y[t * ldy + r] for R rows and T tokens of a min type, over ng groups. The activation groups
// come from repack_act_q8<0>: corr = -(sum of the block's quants).
template <int R, int T>
void q_min_tile(const QMinGroupW* const* w, const QGroupX* const* x, size_t ng, float* y,
                size_t ldy) {
  __m256 acc[R][T], accm[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = accm[r][t] = _mm256_setzero_ps();
  for (size_t g = 0; g < ng; ++g) {
    __m256i s[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) s[r][t] = _mm256_setzero_si256();
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
    for (int t = 0; t < T; ++t) {
      const __m256 xs = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), x[t][g].corr));
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].d, x[t][g].d),
                                    _mm256_cvtepi32_ps(s[r][t]), acc[r][t]);
        accm[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(w[r][g].m, x[t][g].d), xs, accm[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const float sum = reduce8(acc[r][t]);
      y[size_t(t) * ldy + size_t(r)] = sum + reduce8(accm[r][t]);
    }
}

template <int R, int T>
struct QMinTile {
  static void run(const QMinGroupW* const* w, const QGroupX* const* x, size_t ng, float* y,
                  size_t ldy) {
    q_min_tile<R, T>(w, x, ng, y, ldy);
  }
};

// Signed types: Q8_0's 4 x 3 tiles. Min types: 3 x 3 (two accumulators per element). B8: the
// rows in the Blocks8 layout (kernels/weight_layout.h), unpacked a row at a time.
template <typename U, bool B8 = false>
void gemm_q32_vnni(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                   size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  using Block = typename U::Block;
  const size_t nb = n_cols / kQBlock, ng = (nb + 7) / 8;
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  thread_local std::vector<uint8_t> buf;
  auto row = [&](size_t r) {
    return reinterpret_cast<const Block*>(file_layout_row(U::kType, B8, w, w_row_bytes, r, buf));
  };
  if constexpr (U::kMin) {
    gemm_tiled<3, 3, QMinTile, QMinGroupW, QGroupX>(
        w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
        [&](size_t r, QMinGroupW* out) { repack_w_q32<U>(row(r), nb, out); },
        [&](size_t t, QGroupX* out) { repack_act_q8<0>(xq + t * nb, nb, out); });
  } else {
    gemm_tiled<4, 3, QTile, QGroupW, QGroupX>(
        w, w_row_bytes, ng, n_rows, n_tok, y, ldy,
        [&](size_t r, QGroupW* out) { repack_w_q32<U>(row(r), nb, out); },
        [&](size_t t, QGroupX* out) { repack_act_q8<7>(xq + t * nb, nb, out); });
  }
}

}  // namespace
}  // namespace tzero::x86
