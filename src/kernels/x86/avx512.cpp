// AVX-512 (F, BW, VL, DQ, VNNI) kernels (compiled with the matching -m flags; run only when
// CPUID says so). The 16 lanes of the float dot live in one zmm register; int8 blocks use VNNI.
#include "kernels/delta_net.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"
#include "kernels/x86/attention_avx512.h"
#include "kernels/x86/gemm_float.h"
#include "kernels/x86/gemm_k16_avx512.h"
#include "kernels/x86/gemm_legacy_vnni.h"
#include "kernels/x86/gemm_q32_decode.h"
#include "kernels/x86/gemm_q4k_decode.h"
#include "kernels/x86/gemm_q6k_decode.h"
#include "kernels/x86/gemm_rows16.h"
#include "kernels/x86/gemm_vnni.h"
#include "kernels/x86/kernels_impl.h"
#include "kernels/x86/rows16_kernels.h"

namespace tzero {

namespace {

inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
inline __m512 load16(const uint16_t* p, bool bf16) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if (!bf16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m512 load16_masked(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
inline __m512 load16_masked(const uint16_t* p, __mmask16 m, bool bf16) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  if (!bf16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

struct Avx512 {
  // dot-v1 with the 16 lanes in one register, of S rows w[0..S) with the same x side by side
  // (each row its own accumulator and order; decode's rows come from for_row_streams, and the S
  // independent fma chains also lift one chain's latency bound). Lanes past the tail keep their
  // accumulator (mask3: not fma'd with zeros, which would turn a -0 lane into +0; see
  // avx2_common.h). Stream: the rows are read once (decode), prefetched as x86::dot16_rows'.
  template <size_t S, bool Stream, typename W>
  static void dot16_rows(const W* const* w, const float* x, size_t n, bool bf16, float* out) {
    __m512 acc[S];
    for (size_t r = 0; r < S; ++r) acc[r] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
      const __m512 xv = load16(x + k);
      for (size_t r = 0; r < S; ++r) {
        if constexpr (Stream)
          if (k % (64 / sizeof(W)) == 0) x86::prefetch_ahead<64>(w[r] + k);
        if constexpr (sizeof(W) == 4)
          acc[r] = _mm512_fmadd_ps(load16(w[r] + k), xv, acc[r]);
        else
          acc[r] = _mm512_fmadd_ps(load16(w[r] + k, bf16), xv, acc[r]);
      }
    }
    if (k < n) {
      const __mmask16 m = __mmask16((1u << (n - k)) - 1);
      const __m512 xv = load16_masked(x + k, m);
      for (size_t r = 0; r < S; ++r) {
        if constexpr (sizeof(W) == 4)
          acc[r] = _mm512_mask3_fmadd_ps(load16_masked(w[r] + k, m), xv, acc[r], m);
        else
          acc[r] = _mm512_mask3_fmadd_ps(load16_masked(w[r] + k, m, bf16), xv, acc[r], m);
      }
    }
    for (size_t r = 0; r < S; ++r)
      out[r] = x86::reduce16(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1));
  }
  template <typename W>
  static float dot16(const W* w, const float* x, size_t n, bool bf16) {
    float out;
    dot16_rows<1, false>(&w, x, n, bf16, &out);
    return out;
  }
  static __m256i q8_partial(__m256i abs_w, __m256i signed_x) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), abs_w, signed_x);
  }
};

// Batches of kFloatMinTok tokens or more take the register-tiled gemm of gemm_float.h (6 rows x
// 4 tokens of zmm accumulators); smaller ones (decode) kernels_impl.h's gemm_float, dot16_rows
// over 4 side-by-side rows (F16 from memory, tz_bench_decode --mib 256, Intel Xeon VM: 12.2 GB/s
// at 1 thread and 22.9 at 2 one row at a time, 20.6 and 36.6, the bus, with 4). Same bits.
// Tile shapes measured with 2 MiB chunks, F16, one Zen 4 core, in GFLOP/s (2048x2048 | 2048x5632,
// 128 tokens): 6x4 104 | 99, 4x6 102 | 96, 5x5 102 | 101, 4x4 98 | 84, 4x5 100 | 88, 6x3 74 | 75,
// 8x3 78 | 79; the per-row dots of before 41 | 38. 6x4 loads the fewest activations per fma
// (4 per 24) and wastes the least on partial token tiles.
template <typename W, bool BF16>
void gemm_float_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                       size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= x86::kFloatMinTok)
    x86::gemm_float_tiled<W, BF16, 6, 4, x86::FloatTileAvx512>(w, w_row_bytes, x, n_cols, n_rows,
                                                               n_tok, y, ldy);
  else
    x86::gemm_float<Avx512, W, BF16>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Batches of many tokens take the register-tiled VNNI kernels (gemm_vnni.h); decode-sized ones
// (one sequence, or the batched engine's few) the decode kernels. All give the canonical bits.
// Fewer than kQ32DecodeMaxTok tokens take the decode kernels of gemm_q32_decode.h (D: the type's
// policy there; each group unpacked once for up to 4 tokens), more the register-tiled VNNI ones.
// Weight GB/s at 2 threads (tz_bench_decode --tokens N, decode / tiles): 2 tokens Q4_0 24.6 /
// 13.1, Q8_0 30.5 / 19.8, IQ4_NL 24.7 / 11.5; 4 tokens 14.3 / 7.0, 17.4 / 17.5, 13.5 / 10.6;
// 8 tokens 7.5 / 8.3, 11.3 / 14.3, 7.0 / 8.6.
// B8: the rows in the Blocks8 layout (kernels/weight_layout.h; a row of fewer than 8 blocks,
// n_cols < 256, is the same in both layouts).
constexpr size_t kQ32DecodeMaxTok = 5;
template <typename Block, typename D, bool B8 = false>
void gemm_q_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                   size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= kQ32DecodeMaxTok && n_cols >= size_t(kQBlock))
    x86::gemm_q_vnni<Block, B8>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else if (n_tok < kQ32DecodeMaxTok)
    x86::gemm_q32_decode_avx512<D, B8>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    x86::gemm_q<Avx512, Block>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// The 32-element types of quant_legacy.h: the same split as Q8_0's, the same bits.
template <typename U, typename D, bool B8 = false>
void gemm_q32_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                     size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= kQ32DecodeMaxTok && n_cols >= size_t(kQBlock))
    x86::gemm_q32_vnni<U, B8>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else if (n_tok < kQ32DecodeMaxTok)
    x86::gemm_q32_decode_avx512<D, B8>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    x86::gemm_q32<Avx512, U>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Q4_K and Q5_K (Block): the same kernels, Q5_K's fifth bit added as its quants are unpacked.
template <typename Block>
void gemm_k4_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                    size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= x86::kVnniMinTokQ4K && n_cols >= size_t(kSuperBlock))
    x86::gemm_q4_k_vnni<Block>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    x86::gemm_k4_decode_avx512<Block>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Q6_K below kQ6KDecodeMaxTok tokens: gemm_q6k_decode.h (each block unpacked once for up to 4
// tokens); from it the VNNI tiles. Weight GB/s at 2 threads (tz_bench_decode --tokens N, decode /
// tiles): 2 tokens 17.3 / 10.7, 3 tokens 17.4 / 12.3, 4 tokens 11.5 / 11.6.
constexpr size_t kQ6KDecodeMaxTok = 4;
void gemm_q6_k_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                      size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= kQ6KDecodeMaxTok && n_cols >= size_t(kSuperBlock))
    x86::gemm_q6_k_vnni(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else if (n_tok < kQ6KDecodeMaxTok)
    x86::gemm_q6_k_decode_avx512(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    x86::gemm_k<BlockQ6_K, x86::dot_q6_k_x86>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Q6_K rows in Rows16: the Rows16 kernel below kQ6KRows16TilesMinTok tokens, then the VNNI tiles
// over the panels unpacked by transposes. Weight GB/s at 2 threads, Zen 5 (tz_bench_decode --mib
// 64 --tokens N --layout rows16, kernel / tiles): 16 tokens 13.8-14.3 / 8.8-9.3, 32 tokens 5.2-7.0
// / 4.9-5.1, 64 tokens 2.6-2.8 / 2.8-3.1, 128 tokens 1.3 / 1.6.
constexpr size_t kQ6KRows16TilesMinTok = 32;
void gemm_q6_k_rows16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                             size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= kQ6KRows16TilesMinTok && n_cols >= size_t(kSuperBlock))
    x86::gemm_q6_k_rows16_tiles(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    x86::gemm_q6_k_rows16(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// delta_rule_rows (kernels/delta_net.h, delta-v1) with each row's two passes fused: the decay
// and the dot with k in one sweep (dot-v1's 16 lanes in one register, as dot16), the update and
// the dot with q in the next; the update is a product then a sum (two roundings, no FMA), as
// the reference. Rows whose length is not a multiple of 16 take the reference's loops.
void delta_rows_avx512(float* S, size_t d_k, size_t j0, size_t j1, const float* q, const float* k,
                       const float* v, float g, float beta, float scale, float* out) {
  if (d_k % 16 != 0) {
    delta_rule_rows(
        S, d_k, j0, j1, q, k, v, g, beta, scale, out,
        [](const float* a, const float* b, size_t n) { return Avx512::dot16(a, b, n, false); });
    return;
  }
  const __m512 dec = _mm512_set1_ps(exp_ref(g));
  for (size_t j = j0; j < j1; ++j) {
    float* row = S + j * d_k;
    __m512 acc = _mm512_setzero_ps();
    for (size_t i = 0; i < d_k; i += 16) {
      const __m512 r = _mm512_mul_ps(_mm512_loadu_ps(row + i), dec);
      _mm512_storeu_ps(row + i, r);
      acc = _mm512_fmadd_ps(r, _mm512_loadu_ps(k + i), acc);
    }
    const float kv = x86::reduce16(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    const __m512 dl = _mm512_set1_ps((v[j] - kv) * beta);
    __m512 acc2 = _mm512_setzero_ps();
    for (size_t i = 0; i < d_k; i += 16) {
      const __m512 r =
          _mm512_add_ps(_mm512_loadu_ps(row + i), _mm512_mul_ps(_mm512_loadu_ps(k + i), dl));
      _mm512_storeu_ps(row + i, r);
      acc2 = _mm512_fmadd_ps(r, _mm512_loadu_ps(q + i), acc2);
    }
    out[j] = x86::reduce16(_mm512_castps512_ps256(acc2), _mm512_extractf32x8_ps(acc2, 1)) * scale;
  }
}

KernelSet make_avx512() {
  KernelSet set = x86::make_kernel_set<Avx512>("avx512");
  set.gemm_f32 = gemm_float_avx512<float, false>;
  set.gemm_f16 = gemm_float_avx512<uint16_t, false>;
  set.gemm_bf16 = gemm_float_avx512<uint16_t, true>;
  set.gemm_q8_0 = gemm_q_avx512<BlockQ8_0, x86::DecQ8_0>;
  set.gemm_q4_0 = gemm_q_avx512<BlockQ4_0, x86::DecQ4_0>;
  set.gemm_q4_1 = gemm_q32_avx512<x86::Q4_1Unpack, x86::DecQ4_1>;
  set.gemm_q5_0 = gemm_q32_avx512<x86::Q5_0Unpack, x86::DecQ5_0>;
  set.gemm_q5_1 = gemm_q32_avx512<x86::Q5_1Unpack, x86::DecQ5_1>;
  set.gemm_iq4_nl = gemm_q32_avx512<x86::IQ4_NLUnpack, x86::DecIQ4_NL>;
  set.gemm_mxfp4 = gemm_q32_avx512<x86::MXFP4Unpack, x86::DecMXFP4>;
  // Rows repacked at load (kernels/weight_layout.h): the same kernels, reading them as they lie.
  set.rows16_q4_k = x86::avx512_rows16_kernel(TensorType::Q4_K);
  set.rows16_q5_k = x86::avx512_rows16_kernel(TensorType::Q5_K);
  set.rows16_q6_k = x86::avx512_rows16_kernel(TensorType::Q6_K);  // prefill on the VNNI tiles
  set.rows16_iq4_xs = x86::avx512_rows16_kernel(TensorType::IQ4_XS);
  set.rows16_q2_k = x86::avx512_rows16_kernel(TensorType::Q2_K);
  set.rows16_q3_k = x86::avx512_rows16_kernel(TensorType::Q3_K);
  set.blocks8_q8_0 = gemm_q_avx512<BlockQ8_0, x86::DecQ8_0, true>;
  set.blocks8_q4_0 = gemm_q_avx512<BlockQ4_0, x86::DecQ4_0, true>;
  set.blocks8_q4_1 = gemm_q32_avx512<x86::Q4_1Unpack, x86::DecQ4_1, true>;
  set.blocks8_q5_0 = gemm_q32_avx512<x86::Q5_0Unpack, x86::DecQ5_0, true>;
  set.blocks8_q5_1 = gemm_q32_avx512<x86::Q5_1Unpack, x86::DecQ5_1, true>;
  set.blocks8_iq4_nl = gemm_q32_avx512<x86::IQ4_NLUnpack, x86::DecIQ4_NL, true>;
  set.blocks8_mxfp4 = gemm_q32_avx512<x86::MXFP4Unpack, x86::DecMXFP4, true>;
  set.gemm_q4_k = gemm_k4_avx512<BlockQ4_K>;
  set.gemm_q5_k = gemm_k4_avx512<BlockQ5_K>;
  set.gemm_q6_k = gemm_q6_k_avx512;
  set.gemm_q2_k = x86::gemm_k16_avx512<BlockQ2_K>;
  set.gemm_q3_k = x86::gemm_k16_avx512<BlockQ3_K>;
  set.gemm_iq4_xs = x86::gemm_k16_avx512<BlockIQ4_XS>;
  set.attn_scores = x86::attn_scores_avx512;
  set.attn_block = x86::attn_block_avx512;
  set.delta_rows = delta_rows_avx512;
  return set;
}

}  // namespace

const KernelSet& avx512_kernels() {
  static const KernelSet set = make_avx512();
  return set;
}

}  // namespace tzero

namespace tzero::x86 {
GemmFn avx512_rows16_kernel(TensorType t) {
  switch (t) {
    case TensorType::Q4_K:
      return gemm_k4_rows16<BlockQ4_K>;
    case TensorType::Q5_K:
      return gemm_k4_rows16<BlockQ5_K>;
    case TensorType::Q6_K:
      return gemm_q6_k_rows16_avx512;
    case TensorType::IQ4_XS:
      return gemm_iq4_xs_rows16;
    case TensorType::Q2_K:
      return gemm_k2_rows16<BlockQ2_K>;
    case TensorType::Q3_K:
      return gemm_k2_rows16<BlockQ3_K>;
    default:
      return nullptr;
  }
}
}  // namespace tzero::x86
