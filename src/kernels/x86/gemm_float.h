// Batched (prefill) float-weight gemm (F32, F16, BF16 weights; f32 activations): register tiles
// of R weight rows x T tokens. Included by avx2.cpp and avx512.cpp; the AVX-512 tile is compiled
// only where __AVX512F__ is defined. Everything here has internal linkage.
//
// CONTRACT (dot-v1, kernels/dot.h): every (row, token) element is the canonical 16-lane dot.
// Lane l of an accumulator IS acc[l] of the reference: a tile steps k by 16 over the whole row,
// one fma per lane and step, in increasing k, from +0.0; F16 and BF16 weights are widened to f32
// exactly (no f16 arithmetic); the K % 16 tail updates only the lanes that have an element
// (AVX-512: mask3 fma; AVX2: blend of the fma result), so a lane holding -0.0 keeps it; then the
// tree reduce16. No accumulator is shared between two elements and none is split over K, so the
// bits do not depend on the tile shapes, the chunking, the batch or the thread split.
//
// Reuse: per thread's row range, tokens are taken in chunks of about kFloatActBudget bytes of
// activations; for each group of R rows, the chunk's first token tile widens the weights straight
// from the rows (streaming them from memory while it computes) and stores them to a small panel,
// and the chunk's other tiles read the panel: each weight is widened once per chunk, each weight
// load serves T tokens and each activation load R rows. F32 weights need no widening: every tile
// reads the rows. Small batches (decode) use the per-row dots of kernels_impl.h (same bits).
#pragma once

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

// Activation bytes per token chunk. Each chunk reads the weights again (from DRAM) and widens
// them, so larger chunks win while the activations stay in cache; measured on Zen 4 (1 MiB L2,
// 32 MiB L3), 6 x 4 tiles, F16, 512 tokens, one core, GFLOP/s: 2048 x 5632: 256 KiB 69, 512 KiB
// 84, 1 MiB 95, 2 MiB 101, 4 MiB 106; 2048 x 2048: all 100-107. 2 MiB is one Sapphire Rapids L2;
// past it the activations come from L3 (a 6 x 4 tile loads 4 activation vectors per 24 fma).
constexpr size_t kFloatActBudget = size_t(2) << 20;

// Batches below this many tokens take the per-row dots (kernels_impl.h gemm_float, dot16_rows):
// with weights streamed from DRAM (16384 x 2048 F16, one Zen 4 core), 6 x 4 tiles vs the dots
// one row at a time: 1 token 10.5 vs 28 GFLOP/s, 2 tokens 20 vs 33, 3 tokens 27 vs 24, 4 tokens
// 37 vs 29 (4x2 AVX2 tiles: 1 token 18 vs 23, 2 tokens 31 vs 33, 3 tokens 26 vs 24). With 4
// rows side by side (Intel Xeon VM, tz_bench_decode --types f16 --tokens 3|4, threshold 3
// against 5, weight GB/s at 1 / 2 threads): 3 tokens 10.1-11.0 / 18.7-19.8 on the tiles vs
// 6.7-9.7 / 11.6-13.2 on the dots, 4 tokens 9.4-9.9 / 16.6-20.0 vs 6.4-7.6 / 10.7-11.6.
constexpr size_t kFloatMinTok = 3;

struct alignas(64) Lane16 {  // 16 consecutive weights of one row, widened to f32
  float v[16];
};

// Where a tile takes its weights: kRows widens them from the rows (F32: plain loads), kRowsStore
// also stores them to the panel, kPanel loads them from the panel.
enum class Src { kRows, kRowsStore, kPanel };

// A tile: y[t * ldy + r] = dot-v1(row r, token t) for r < nr (<= R), t < T.
// wr[r]: row r's n_cols weights (rows nr..R-1 repeat a valid row; their results are dropped);
// panel: ceil(n_cols / 16) x R Lane16, panel[j * R + r] = elements 16j..16j+15 of row r (the
// last block's padding is never used); xp[t]: token t's n_cols activations (f32, unaligned).
template <typename W>
using FloatTileFn = void (*)(const W* const* wr, Lane16* panel, const float* const* xp,
                             size_t n_cols, size_t nr, float* y, size_t ldy);

// 8 weights widened to f32 (exact).
template <typename W, bool BF16>
inline __m256 widen8(const W* p) {
  if constexpr (sizeof(W) == 4)
    return load8(p);
  else
    return load8(p, BF16);
}

template <typename W, bool BF16, int R, int T, Src S>
struct FloatTileAvx2 {  // two ymm per element: lanes 0-7 (lo) and 8-15 (hi)
  static void run(const W* const* wr, Lane16* panel, const float* const* xp, size_t n_cols,
                  size_t nr, float* y, size_t ldy) {
    __m256 lo[R][T], hi[R][T];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) lo[r][t] = hi[r][t] = _mm256_setzero_ps();
    // Half h (0: lanes 0-7, 1: lanes 8-15) of block j: R weight vectors, then T activation
    // vectors against them (2 R T accumulators + R + 1 registers live).
    auto half = [&](size_t j, int h, const W* const* src, __m256(&acc)[R][T],
                    const float* const* xs, auto&& fma) {
      __m256 wv[R];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if constexpr (S == Src::kPanel) {
          wv[r] = _mm256_load_ps(panel[j * R + r].v + 8 * h);
        } else {
          wv[r] = widen8<W, BF16>(src[r] + 8 * h);
          if constexpr (S == Src::kRowsStore) _mm256_store_ps(panel[j * R + r].v + 8 * h, wv[r]);
        }
      }
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m256 xv = fma.load(xs[t] + 8 * h);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][t] = fma(wv[r], xv, acc[r][t]);
      }
    };
    struct Plain {
      __m256 load(const float* p) const { return _mm256_loadu_ps(p); }
      __m256 operator()(__m256 a, __m256 b, __m256 c) const { return _mm256_fmadd_ps(a, b, c); }
    };
    const size_t nk = n_cols / 16;
    for (size_t j = 0; j < nk; ++j) {
      const W* src[R];
      const float* xs[T];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) src[r] = wr[r] + 16 * j;
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) xs[t] = xp[t] + 16 * j;
      half(j, 0, src, lo, xs, Plain{});
      half(j, 1, src, hi, xs, Plain{});
    }
    if (const size_t tail = n_cols % 16) {
      W wt[R][16] = {};  // the rows' tails, zero padded (read only without the panel)
      const W* src[R];
      const float* xs[T];
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if constexpr (S != Src::kPanel) std::memcpy(wt[r], wr[r] + 16 * nk, tail * sizeof(W));
        src[r] = wt[r];
      }
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) xs[t] = xp[t] + 16 * nk;
      // Lanes past the tail keep their accumulator: the fma result is blended in only where
      // there is an element, and the activations past it are never read (masked loads).
      struct Masked {
        __m256i m;
        __m256 load(const float* p) const { return _mm256_maskload_ps(p, m); }
        __m256 operator()(__m256 a, __m256 b, __m256 c) const {
          return _mm256_blendv_ps(c, _mm256_fmadd_ps(a, b, c), _mm256_castsi256_ps(m));
        }
      };
      const __m256i rem = _mm256_set1_epi32(int(tail));
      half(nk, 0, src, lo, xs,
           Masked{_mm256_cmpgt_epi32(rem, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))});
      half(nk, 1, src, hi, xs,
           Masked{_mm256_cmpgt_epi32(rem, _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15))});
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      if (size_t(r) < nr)
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = reduce16(lo[r][t], hi[r][t]);
  }
};

#if defined(__AVX512F__)
// 16 weights (the first `m` of them where m is a mask) widened to f32 (exact).
template <typename W, bool BF16>
inline __m512 widen16_zmm(const W* p, __mmask16 m = 0xffff) {
  if constexpr (sizeof(W) == 4) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if constexpr (!BF16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <typename W, bool BF16, int R, int T, Src S>
struct FloatTileAvx512 {  // one zmm per element: its 16 lanes are the 16 dot-v1 lanes
  static void run(const W* const* wr, Lane16* panel, const float* const* xp, size_t n_cols,
                  size_t nr, float* y, size_t ldy) {
    __m512 acc[R][T];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const size_t nk = n_cols / 16;
    auto weights = [&](size_t j, __mmask16 m, __m512* wv) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        if constexpr (S == Src::kPanel) {
          wv[r] = _mm512_load_ps(panel[j * R + r].v);
        } else {
          wv[r] = widen16_zmm<W, BF16>(wr[r] + 16 * j, m);
          if constexpr (S == Src::kRowsStore) _mm512_store_ps(panel[j * R + r].v, wv[r]);
        }
      }
    };
    for (size_t j = 0; j < nk; ++j) {
      __m512 wv[R];
      weights(j, 0xffff, wv);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512 xv = _mm512_loadu_ps(xp[t] + 16 * j);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
      }
    }
    if (const size_t tail = n_cols % 16) {
      const __mmask16 m = __mmask16((1u << tail) - 1);
      __m512 wv[R];
      weights(nk, m, wv);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512 xv = _mm512_maskz_loadu_ps(m, xp[t] + 16 * nk);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)  // lanes past the tail keep their accumulator
          acc[r][t] = _mm512_mask3_fmadd_ps(wv[r], xv, acc[r][t], m);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
      if (size_t(r) < nr)
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t)
          y[size_t(t) * ldy + size_t(r)] =
              reduce16(_mm512_castps512_ps256(acc[r][t]), _mm512_extractf32x8_ps(acc[r][t], 1));
  }
};
#endif

// table[s][t - 1] = Tile<..., t, Src(s)>::run: every source and every token count 1..T.
template <typename W, bool BF16, int R, int T, template <typename, bool, int, int, Src> class Tile>
struct FloatTileTable {
  template <Src S, size_t... I>
  static constexpr std::array<FloatTileFn<W>, T> row(std::index_sequence<I...>) {
    return {&Tile<W, BF16, R, int(I) + 1, S>::run...};
  }
  static constexpr std::array<FloatTileFn<W>, T> fn[3] = {
      row<Src::kRows>(std::make_index_sequence<T>()),
      row<Src::kRowsStore>(std::make_index_sequence<T>()),
      row<Src::kPanel>(std::make_index_sequence<T>()),
  };
};

// y[t * ldy + r] = dot-v1(row r, token t) for r < n_rows, t < n_tok (a GemmFn for float weights).
template <typename W, bool BF16, int R, int T, template <typename, bool, int, int, Src> class Tile>
void gemm_float_tiled(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                      size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  using Table = FloatTileTable<W, BF16, R, T, Tile>;
  constexpr bool kWiden = sizeof(W) != 4;
  const float* xf = static_cast<const float*>(x);
  thread_local std::vector<Lane16> panel;  // ceil(n_cols / 16) x R: the row group, widened
  if (kWiden && panel.size() < R * ((n_cols + 15) / 16)) panel.resize(R * ((n_cols + 15) / 16));
  size_t tc = kFloatActBudget / ((n_cols ? n_cols : 1) * sizeof(float));  // tokens per chunk
  tc = tc < size_t(T) ? size_t(T) : tc / T * T;
  for (size_t t0 = 0; t0 < n_tok; t0 += tc) {
    const size_t nt = n_tok - t0 < tc ? n_tok - t0 : tc;
    for (size_t r0 = 0; r0 < n_rows; r0 += R) {
      const size_t nr = n_rows - r0 < size_t(R) ? n_rows - r0 : size_t(R);
      const W* wr[R];
      for (size_t r = 0; r < size_t(R); ++r)
        wr[r] = reinterpret_cast<const W*>(w + (r0 + (r < nr ? r : nr - 1)) * w_row_bytes);
      for (size_t tt = 0; tt < nt; tt += T) {
        const size_t ntt = nt - tt < size_t(T) ? nt - tt : size_t(T);
        const float* xp[T];
        for (size_t t = 0; t < ntt; ++t) xp[t] = xf + (t0 + tt + t) * n_cols;
        // Only a chunk with more tiles to come stores the panel; F32 always reads the rows.
        const Src s = !kWiden || nt <= size_t(T) ? Src::kRows
                      : tt == 0                  ? Src::kRowsStore
                                                 : Src::kPanel;
        Table::fn[int(s)][ntt - 1](wr, panel.data(), xp, n_cols, nr, y + (t0 + tt) * ldy + r0, ldy);
      }
    }
  }
}

}  // namespace
}  // namespace tzero::x86
