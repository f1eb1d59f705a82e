// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; run only when CPUID says so).
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/x86/gemm_float.h"
#include "kernels/x86/gemm_q32_decode_avx2.h"
#include "kernels/x86/kernels_impl.h"

namespace tzero {

namespace {
struct Avx2 {
  template <typename W>
  static float dot16(const W* w, const float* x, size_t n, bool bf16) {
    return x86::dot16(w, x, n, bf16);
  }
  template <size_t S, bool Stream, typename W>
  static void dot16_rows(const W* const* w, const float* x, size_t n, bool bf16, float* out) {
    x86::dot16_rows<S, Stream>(w, x, n, bf16, out);
  }
  // 8 int32 partial sums of the 32 products |w| * sign(x, w) of one block (exact: |w| <= 128,
  // |x| <= 127, so the int16 pair sums of maddubs cannot saturate).
  static __m256i q8_partial(__m256i abs_w, __m256i signed_x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_x), _mm256_set1_epi16(1));
  }
};

// Batches of kFloatMinTok tokens or more take the register-tiled gemm of gemm_float.h (4 rows x
// 2 tokens, two ymm accumulators each: all 16 registers); smaller ones kernels_impl.h's
// gemm_float (dot16_rows over 4 side-by-side rows). Same bits. Measured, F16, one Zen 4 core,
// GFLOP/s (2048x2048 | 2048x5632, 128 tokens): 4x2 60 | 56, 3x2 59 | 53, 3x3 50 | 52, 2x3 52 | 50,
// 2x2 44 | 43, 1x6 37 | 37; the per-row dots of before 41 | 38.
template <typename W, bool BF16>
void gemm_float_avx2(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                     size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= x86::kFloatMinTok)
    x86::gemm_float_tiled<W, BF16, 4, 2, x86::FloatTileAvx2>(w, w_row_bytes, x, n_cols, n_rows,
                                                             n_tok, y, ldy);
  else
    x86::gemm_float<Avx2, W, BF16>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

// Blocks8 rows (kernels/weight_layout.h) of up to kB8DecodeMaxTok tokens take
// gemm_q32_decode_avx2.h's kernels; more tokens, the set's own kernel on the rows unpacked.
constexpr size_t kB8DecodeMaxTok = 4;
template <typename U, GemmFn File>
void gemm_b8_avx2(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                  size_t n_tok, float* y, size_t ldy) {
  if (n_tok <= kB8DecodeMaxTok)
    x86::gemm_b8_decode_avx2<U>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  else
    gemm_unpacked(File, WeightLayout::Blocks8, U::kType, w, w_row_bytes, x, n_cols, n_rows, n_tok,
                  y, ldy);
}

KernelSet make_avx2() {
  KernelSet set = x86::make_kernel_set<Avx2>("avx2");
  set.gemm_f32 = gemm_float_avx2<float, false>;
  set.gemm_f16 = gemm_float_avx2<uint16_t, false>;
  set.gemm_bf16 = gemm_float_avx2<uint16_t, true>;
  set.blocks8_q4_0 = gemm_b8_avx2<x86::B8Q4_0, x86::gemm_q<Avx2, BlockQ4_0>>;
  set.blocks8_q4_1 = gemm_b8_avx2<x86::B8Q4_1, x86::gemm_q32<Avx2, x86::Q4_1Unpack>>;
  set.blocks8_iq4_nl = gemm_b8_avx2<x86::B8IQ4_NL, x86::gemm_q32<Avx2, x86::IQ4_NLUnpack>>;
  set.blocks8_q5_0 = gemm_b8_avx2<x86::B8Q5_0, x86::gemm_q32<Avx2, x86::Q5_0Unpack>>;
  set.blocks8_q5_1 = gemm_b8_avx2<x86::B8Q5_1, x86::gemm_q32<Avx2, x86::Q5_1Unpack>>;
  set.blocks8_mxfp4 = gemm_b8_avx2<x86::B8MXFP4, x86::gemm_q32<Avx2, x86::MXFP4Unpack>>;
  set.blocks8_q8_0 = gemm_b8_avx2<x86::B8Q8_0, x86::gemm_q<Avx2, BlockQ8_0>>;
  return set;
}
}  // namespace

const KernelSet& avx2_kernels() {
  static const KernelSet set = make_avx2();
  return set;
}

}  // namespace tzero
