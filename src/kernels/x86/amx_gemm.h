// Batched (prefill) Q8_0 / Q4_0 gemms whose int8 block sums come from AMX tiles, written once
// over the tile interface of amx_tiles.h (AmxHw: the instructions; AmxEmu: the emulator the
// tests run on CPUs without AMX). Included only by amx.cpp (AVX-512 for the float part).
//
// dot-v1 (kernels/dot.h): isum[b] = exact int32 sum of w_q * x_q over block b; p[b] = d_w[b] *
// d_x[b]; 8 block lanes acc[b % 8] = fma(p[b], float(isum[b]), acc[b % 8]) in increasing b from
// +0.0; then the 4/2/1 tree. TDPBSSD sums int8 x int8 into int32 exactly, so only the float part
// has an order, and it is the reference's, element by element.
//
// TILES (palette 1, kAmxConfig):
//   A (tiles 4, 5): 16 weight rows x 32 bytes: row m = the 32 signed quants of one block of
//                   weight row m (Q4_0 unpacked to nibble - 8 first). K = 32 bytes = one block.
//   B (tiles 6, 7): 8 rows x 64 bytes: B[k][4n + i] = x_q[token n][4k + i] for 16 tokens.
//   C (tiles 0..3): 16 x 16 int32: C[m][n] = isum of (row m, token n) for that one block.
//   One TDPBSSD per (A, B) pair and block: C is zeroed, multiplied, and stored per block, so
//   the tiles never sum across blocks. Up to 2 A x 2 B tiles (32 rows x 32 tokens) per pass.
// FLOAT PART (AVX-512, one zmm = the 16 tokens of one C row): per 8 blocks, the C tiles of those
// blocks are stored (cbuf) and each row m does acc[b % 8] = fma(set1(d_w[m][b]) * d_x[b][0..15],
// cvt(C_b[m]), acc[b % 8]) in increasing b; the accumulators of all blocks live in acc (memory).
// Then the tree, elementwise, and y[t * ldy + r] for the real rows and tokens only.
// TAILS: rows past n_rows and tokens past n_tok are packed as zero quants with d = 0 and their
// outputs are dropped; blocks are never padded (a row's lanes see exactly its nb blocks).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/quant.h"
#include "kernels/weight_layout.h"
#include "kernels/x86/amx_tiles.h"

namespace tzero::x86 {
namespace {

// Batches below this many tokens take the avx512 kernels (decode and small prefill chunks: one
// 16-token B tile would be mostly padding).
constexpr size_t kAmxMinTok = 16;
constexpr int kAmxTileRows = 16;  // weight rows per A tile, C rows
constexpr int kAmxTileTok = 16;   // tokens per B tile, C columns
constexpr int kAmxChunk = 8;      // blocks per float pass (one per lane)
// Packed activation bytes per pass: tokens are chunked so they mostly stay in L2 (as
// kVnniActBudget in gemm_vnni.h; not measured on AMX hardware).
constexpr size_t kAmxActBudget = size_t(1024) << 10;

constexpr AmxTileConfig make_amx_config() {
  AmxTileConfig c{};
  c.palette_id = 1;
  for (int t = 0; t < 4; ++t) {  // C
    c.rows[t] = kAmxTileRows;
    c.colsb[t] = kAmxTileTok * 4;
  }
  for (int t = 4; t < 6; ++t) {  // A
    c.rows[t] = kAmxTileRows;
    c.colsb[t] = kQBlock;
  }
  for (int t = 6; t < 8; ++t) {  // B
    c.rows[t] = kQBlock / 4;
    c.colsb[t] = kAmxTileTok * 4;
  }
  return c;
}
alignas(64) constexpr AmxTileConfig kAmxConfig = make_amx_config();

// Configures this thread's tiles for the life of one gemm call and releases them after, so a
// thread holds no tile state between matmuls and never runs with a stale configuration (another
// library on the same thread may have loaded its own).
template <typename Tiles>
struct AmxScope {
  AmxScope() { Tiles::configure(kAmxConfig); }
  ~AmxScope() { Tiles::release(); }
  AmxScope(const AmxScope&) = delete;
  AmxScope& operator=(const AmxScope&) = delete;
};

// One A tile's worth of weight rows, packed for all nb blocks.
struct AmxRowTile {
  int8_t* q;  // [nb][16 rows][32]: tile A of block b at q + 512 b, stride 32
  float* d;   // [nb][16 rows]: d_w widened from f16 (0 for padding rows)
};
// One B tile's worth of tokens, packed for all nb blocks.
struct AmxTokTile {
  int8_t* q;  // [nb][8][64]: tile B of block b at q + 512 b, stride 64
  float* d;   // [nb][16 tokens]: d_x (0 for padding tokens)
};
constexpr size_t kAmxTileBytes = 512;  // 16 x 32 (A) = 8 x 64 (B)

template <typename Block>
void amx_pack_rows(const uint8_t* w, size_t w_row_bytes, size_t nb, size_t r0, size_t nr,
                   AmxRowTile out) {
  for (size_t b = 0; b < nb; ++b) {
    int8_t* q = out.q + b * kAmxTileBytes;
    float* d = out.d + b * kAmxTileRows;
    for (size_t m = 0; m < size_t(kAmxTileRows); ++m) {
      int8_t* qm = q + m * kQBlock;
      if (m >= nr) {
        std::memset(qm, 0, kQBlock);
        d[m] = 0.0f;
        continue;
      }
      const Block& wb = reinterpret_cast<const Block*>(w + (r0 + m) * w_row_bytes)[b];
      if constexpr (sizeof(Block) == sizeof(BlockQ4_0)) {  // quant.h: q[i] low, q[i + 16] high
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.qs));
        const __m128i nib = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, nib), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), nib), eight);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qm), lo);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qm + 16), hi);
      } else {
        std::memcpy(qm, wb.qs, kQBlock);
      }
      d[m] = fp16_to_float(wb.d);  // exact, the reference's widening
    }
  }
}

// Tokens t0 .. t0 + nt - 1 (nt <= 16) of x (rows of nb ActQ8 blocks) into one B tile per block.
inline void amx_pack_tokens(const ActQ8* x, size_t nb, size_t t0, size_t nt, AmxTokTile out) {
  for (size_t b = 0; b < nb; ++b) {
    int8_t* q = out.q + b * kAmxTileBytes;  // [k][n][i]: row k = 16 tokens x 4 bytes
    float* d = out.d + b * kAmxTileTok;
    for (size_t n = 0; n < size_t(kAmxTileTok); ++n) {
      if (n >= nt) {
        for (int k = 0; k < kQBlock / 4; ++k) std::memset(q + k * 64 + n * 4, 0, 4);
        d[n] = 0.0f;
        continue;
      }
      const ActQ8& xb = x[(t0 + n) * nb + b];
      for (int k = 0; k < kQBlock / 4; ++k) std::memcpy(q + k * 64 + n * 4, xb.qs + 4 * k, 4);
      d[n] = xb.d;
    }
  }
}

// RA A tiles x TB B tiles (RA, TB in 1..2): y for nr rows (of RA * 16) and nt tokens (of
// TB * 16); y points at (first token, first row).
template <typename Tiles, int RA, int TB>
void amx_q_pass(const AmxRowTile* wa, const AmxTokTile* xb, size_t nb, size_t nr, size_t nt,
                float* y, size_t ldy) {
  constexpr int NC = RA * TB;  // C tile c = 2 * ra + tb for the 2 x 2 case (AmxHw's roles)
  // Real rows of C tile c (its padding rows are computed by the tiles but never used).
  auto rows_of = [nr](int c) {
    const size_t rbase = size_t(c / TB) * kAmxTileRows;
    return rbase >= nr                         ? size_t(0)
           : nr - rbase < size_t(kAmxTileRows) ? nr - rbase
                                               : size_t(kAmxTileRows);
  };
  alignas(64) float acc[NC][kAmxTileRows][kAmxChunk][kAmxTileTok];     // [c][row][lane][token]
  alignas(64) int32_t cbuf[NC][kAmxChunk][kAmxTileRows][kAmxTileTok];  // [c][block][row][tok]
  std::memset(acc, 0, sizeof(acc));                                    // +0.0 in every lane
  for (size_t b0 = 0; b0 < nb; b0 += kAmxChunk) {
    const size_t nblk = nb - b0 < size_t(kAmxChunk) ? nb - b0 : size_t(kAmxChunk);
    for (size_t j = 0; j < nblk; ++j) {
      const size_t off = (b0 + j) * kAmxTileBytes;
      Tiles::template load<4>(wa[0].q + off, kQBlock);
      if constexpr (RA == 2) Tiles::template load<5>(wa[1].q + off, kQBlock);
      Tiles::template load<6>(xb[0].q + off, 64);
      if constexpr (TB == 2) Tiles::template load<7>(xb[1].q + off, 64);
      Tiles::template zero<0>();
      Tiles::template dpbssd<0, 4, 6>();
      Tiles::template store<0>(cbuf[0][j], 64);
      if constexpr (TB == 2) {
        Tiles::template zero<1>();
        Tiles::template dpbssd<1, 4, 7>();
        Tiles::template store<1>(cbuf[1][j], 64);
      }
      if constexpr (RA == 2) {
        Tiles::template zero<2>();
        Tiles::template dpbssd<2, 5, 6>();
        Tiles::template store<2>(cbuf[TB][j], 64);
      }
      if constexpr (RA == 2 && TB == 2) {
        Tiles::template zero<3>();
        Tiles::template dpbssd<3, 5, 7>();
        Tiles::template store<3>(cbuf[3][j], 64);
      }
    }
    // The float part of these blocks, each (row, token) element in increasing b (lane j = b % 8
    // because b0 is a multiple of 8).
    for (int c = 0; c < NC; ++c) {
      const AmxRowTile& wt = wa[c / TB];
      const AmxTokTile& xt = xb[c % TB];
      for (size_t m = 0; m < rows_of(c); ++m)
        for (size_t j = 0; j < nblk; ++j) {
          const size_t b = b0 + j;
          const __m512 p = _mm512_mul_ps(_mm512_set1_ps(wt.d[b * kAmxTileRows + m]),
                                         _mm512_loadu_ps(xt.d + b * kAmxTileTok));
          const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(cbuf[c][j][m]));
          float* a = acc[c][m][j];
          _mm512_store_ps(a, _mm512_fmadd_ps(p, s, _mm512_load_ps(a)));
        }
    }
  }
  for (int c = 0; c < NC; ++c) {
    const size_t rbase = size_t(c / TB) * kAmxTileRows, tbase = size_t(c % TB) * kAmxTileTok;
    if (rbase >= nr || tbase >= nt) continue;
    const size_t rn = rows_of(c);
    const size_t tn = nt - tbase < size_t(kAmxTileTok) ? nt - tbase : size_t(kAmxTileTok);
    for (size_t m = 0; m < rn; ++m) {
      __m512 l[kAmxChunk];
      for (int j = 0; j < kAmxChunk; ++j) l[j] = _mm512_load_ps(acc[c][m][j]);
      for (int j = 0; j < 4; ++j) l[j] = _mm512_add_ps(l[j], l[j + 4]);
      for (int j = 0; j < 2; ++j) l[j] = _mm512_add_ps(l[j], l[j + 2]);
      alignas(64) float v[kAmxTileTok];
      _mm512_store_ps(v, _mm512_add_ps(l[0], l[1]));
      for (size_t n = 0; n < tn; ++n) y[(tbase + n) * ldy + rbase + m] = v[n];
    }
  }
}

// y[t * ldy + r] = dot-v1(weight row r, token t) for r < n_rows, t < n_tok (kernel_set.h GemmFn);
// n_tok >= kAmxMinTok is the caller's choice (any n_tok >= 1 gives the same bits).
// B8: the rows in the Blocks8 layout (kernels/weight_layout.h), each pair of row tiles unpacked
// before it is packed.
template <typename Tiles, typename Block, bool B8 = false>
void gemm_q_amx_tiles(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                      size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = n_cols / kQBlock;
  if (nb == 0 || n_rows == 0 || n_tok == 0) {
    for (size_t t = 0; t < n_tok; ++t)
      for (size_t r = 0; r < n_rows; ++r) y[t * ldy + r] = 0.0f;  // the reference's empty sum
    return;
  }
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  constexpr size_t kPair = 2 * kAmxTileTok;
  // Tokens per chunk: a multiple of 32 whose packed tiles fit the budget.
  size_t tc = kAmxActBudget / (nb * (kAmxTileBytes + kAmxTileTok * sizeof(float)) / kAmxTileTok);
  tc = tc < kPair ? kPair : tc / kPair * kPair;
  const size_t tiles_per_chunk = tc / kAmxTileTok;
  // Packed operands, per thread: xq_buf [tiles_per_chunk][nb][512], xd_buf [..][nb][16],
  // wq_buf [2][nb][512], wd_buf [2][nb][16].
  thread_local std::vector<int8_t> xq_buf, wq_buf;
  thread_local std::vector<float> xd_buf, wd_buf;
  if (xq_buf.size() < tiles_per_chunk * nb * kAmxTileBytes) {
    xq_buf.resize(tiles_per_chunk * nb * kAmxTileBytes);
    xd_buf.resize(tiles_per_chunk * nb * kAmxTileTok);
  }
  if (wq_buf.size() < 2 * nb * kAmxTileBytes) {
    wq_buf.resize(2 * nb * kAmxTileBytes);
    wd_buf.resize(2 * nb * kAmxTileRows);
  }
  const AmxRowTile wt[2] = {
      {wq_buf.data(), wd_buf.data()},
      {wq_buf.data() + nb * kAmxTileBytes, wd_buf.data() + nb * kAmxTileRows}};
  const AmxScope<Tiles> scope;
  for (size_t t0 = 0; t0 < n_tok; t0 += tc) {
    const size_t nt = n_tok - t0 < tc ? n_tok - t0 : tc;
    const size_t ntiles = (nt + kAmxTileTok - 1) / kAmxTileTok;
    for (size_t i = 0; i < ntiles; ++i) {
      const size_t first = i * kAmxTileTok;
      const size_t cnt = nt - first < size_t(kAmxTileTok) ? nt - first : size_t(kAmxTileTok);
      amx_pack_tokens(
          xq, nb, t0 + first, cnt,
          {xq_buf.data() + i * nb * kAmxTileBytes, xd_buf.data() + i * nb * kAmxTileTok});
    }
    for (size_t r0 = 0; r0 < n_rows; r0 += 2 * kAmxTileRows) {
      const size_t nr = n_rows - r0 < 2 * size_t(kAmxTileRows) ? n_rows - r0 : 2 * kAmxTileRows;
      const int ra = nr > size_t(kAmxTileRows) ? 2 : 1;
      const uint8_t* wr = w + r0 * w_row_bytes;  // rows r0 .. r0 + nr in the file's layout
      if constexpr (B8) {
        thread_local std::vector<uint8_t> rows;
        rows.resize(nr * w_row_bytes);
        from_blocks8(sizeof(Block) == sizeof(BlockQ4_0) ? TensorType::Q4_0 : TensorType::Q8_0, wr,
                     rows.data(), nr, w_row_bytes);
        wr = rows.data();
      }
      for (int i = 0; i < ra; ++i) {
        const size_t first = size_t(i) * kAmxTileRows;
        const size_t cnt = nr - first < size_t(kAmxTileRows) ? nr - first : size_t(kAmxTileRows);
        amx_pack_rows<Block>(wr, w_row_bytes, nb, first, cnt, wt[i]);
      }
      for (size_t i = 0; i < ntiles; i += 2) {
        const size_t first = i * kAmxTileTok;
        const size_t cnt = nt - first < kPair ? nt - first : kPair;
        const AmxTokTile xt[2] = {
            {xq_buf.data() + i * nb * kAmxTileBytes, xd_buf.data() + i * nb * kAmxTileTok},
            {xq_buf.data() + (i + 1) * nb * kAmxTileBytes,
             xd_buf.data() + (i + 1) * nb * kAmxTileTok}};  // (i + 1) unused when cnt <= 16
        float* yp = y + (t0 + first) * ldy + r0;
        const bool two_tok = cnt > size_t(kAmxTileTok);
        if (ra == 2 && two_tok)
          amx_q_pass<Tiles, 2, 2>(wt, xt, nb, nr, cnt, yp, ldy);
        else if (ra == 2)
          amx_q_pass<Tiles, 2, 1>(wt, xt, nb, nr, cnt, yp, ldy);
        else if (two_tok)
          amx_q_pass<Tiles, 1, 2>(wt, xt, nb, nr, cnt, yp, ldy);
        else
          amx_q_pass<Tiles, 1, 1>(wt, xt, nb, nr, cnt, yp, ldy);
      }
    }
  }
}

}  // namespace
}  // namespace tzero::x86
