// The neon-i8mm set's gemm of the 32-element block types whose dot is Q4_0's order (Q8_0, Q4_0,
// Q5_0, IQ4_NL, MXFP4): 2 rows x 2 tokens at a time, each block's four exact int32 sums
// (row, token) from four SMMLA (vmmlaq_s32: a 2x8 by 8x2 int8 product added into a 2x2 int32
// tile) over the block's 8-element chunks. Integer sums are exact, so these are the integers of
// the reference; each (row, token) element then accumulates its blocks in dot-v1's order with its
// own lanes, as dot_q32 does. A row or token without a partner takes dot_q32. Internal linkage;
// included by neon_i8mm.cpp only (compiled with +i8mm).
#pragma once

#include <arm_neon.h>

#include "kernels/arm/neon_quant.h"

namespace tzero::arm {
namespace {

// Chunk c (elements 8c .. 8c + 7) of a block given as its two halves.
inline int8x8_t chunk8(int8x16_t h0, int8x16_t h1, int c) {
  return c == 0   ? vget_low_s8(h0)
         : c == 1 ? vget_high_s8(h0)
         : c == 2 ? vget_low_s8(h1)
                  : vget_high_s8(h1);
}

template <typename I, typename Block>
void gemm_q32_i8mm(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                   size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kQBlock;
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  size_t r = 0;
  for (; r + 2 <= n_rows; r += 2) {
    const Block* w0 = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    const Block* w1 = reinterpret_cast<const Block*>(w + (r + 1) * w_row_bytes);
    size_t t = 0;
    for (; t + 2 <= n_tok; t += 2) {
      const ActQ8* x0 = xq + t * nb;
      const ActQ8* x1 = xq + (t + 1) * nb;
      float acc[4][kBlockLanes] = {};  // (r, t), (r, t + 1), (r + 1, t), (r + 1, t + 1)
      for (size_t b = 0; b < nb; ++b) {
        int8x16_t a0, a1, c0, c1;
        block_halves(w0[b], &a0, &a1);
        block_halves(w1[b], &c0, &c1);
        int32x4_t s = vdupq_n_s32(0);
        for (int c = 0; c < 4; ++c) {
          const int8x16_t wv = vcombine_s8(chunk8(a0, a1, c), chunk8(c0, c1, c));
          const int8x16_t xv = vcombine_s8(vld1_s8(x0[b].qs + 8 * c), vld1_s8(x1[b].qs + 8 * c));
          s = vmmlaq_s32(s, wv, xv);
        }
        int32_t isum[4];
        vst1q_s32(isum, s);
        const float dw[2] = {block_scale(w0[b]), block_scale(w1[b])};
        const float dx[2] = {x0[b].d, x1[b].d};
        for (int e = 0; e < 4; ++e) {
          const float p = dw[e / 2] * dx[e % 2];
          acc[e][b % kBlockLanes] = std::fma(p, float(isum[e]), acc[e][b % kBlockLanes]);
        }
      }
      for (int e = 0; e < 4; ++e) y[(t + e % 2) * ldy + r + e / 2] = tree8(acc[e]);
    }
    for (; t < n_tok; ++t) {
      y[t * ldy + r] = dot_q32<I, Block>(w0, xq + t * nb, n_cols);
      y[t * ldy + r + 1] = dot_q32<I, Block>(w1, xq + t * nb, n_cols);
    }
  }
  for (; r < n_rows; ++r) {
    const Block* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t) y[t * ldy + r] = dot_q32<I, Block>(wr, xq + t * nb, n_cols);
  }
}

}  // namespace
}  // namespace tzero::arm
