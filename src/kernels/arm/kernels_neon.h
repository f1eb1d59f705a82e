// The neon kernel sets, written once over the int8 dot policy I (neon.cpp: widening multiplies;
// neon_dotprod.cpp: SDOT). Every entry computes the scalar reference's canonical order
// (kernels/kernel_set.h); KernelVariants.* compares their bits. Internal linkage.
#pragma once

#include "kernels/arm/neon_float.h"
#include "kernels/arm/neon_kquant.h"
#include "kernels/arm/neon_math.h"
#include "kernels/arm/neon_quant.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"

namespace tzero::arm {
namespace {

#if defined(__ARM_FEATURE_DOTPROD)
// The SDOT dot policy (neon_dotprod.cpp, neon_i8mm.cpp: files compiled with +dotprod): four exact
// int8 products added into each int32 lane, the same integers as Int8Neon's widening multiplies.
struct Int8Sdot {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
#endif

template <typename I>
KernelSet make_neon_set(const char* name) {
  return KernelSet{
      name,
      gemm_float_neon<FloatW::F32>,
      gemm_float_neon<FloatW::F16>,
      gemm_float_neon<FloatW::BF16>,
      gemm_blocks<BlockQ8_0, ActQ8, dot_q32<I, BlockQ8_0>>,
      gemm_blocks<BlockQ4_0, ActQ8, dot_q32<I, BlockQ4_0>>,
      gemm_blocks<BlockQ4_K, ActQ8K, dot_q4_k_neon<I>>,
      gemm_blocks<BlockQ5_K, ActQ8K, dot_q5_k_neon<I>>,
      gemm_blocks<BlockQ6_K, ActQ8K, dot_q6_k_neon<I>>,
      gemm_blocks<BlockQ4_1, ActQ8, dot_q32_min<I, BlockQ4_1>>,
      gemm_blocks<BlockQ5_0, ActQ8, dot_q32<I, BlockQ5_0>>,
      gemm_blocks<BlockQ5_1, ActQ8, dot_q32_min<I, BlockQ5_1>>,
      gemm_blocks<BlockIQ4_NL, ActQ8, dot_q32<I, BlockIQ4_NL>>,
      gemm_blocks<BlockMXFP4, ActQ8, dot_q32<I, BlockMXFP4>>,
      gemm_blocks<BlockQ2_K, ActQ8K, dot_q2_k_neon<I>>,
      gemm_blocks<BlockQ3_K, ActQ8K, dot_q3_k_neon<I>>,
      gemm_blocks<BlockIQ4_XS, ActQ8K, dot_iq4_xs_neon<I>>,
      quantize_act_q8_neon,
      quantize_act_q8k_neon,
      dot_f32_neon,
      rmsnorm_neon,
      attn_scores_neon,
      attn_block_neon,
      glu_neon<silu4, silu_ref>,
      glu_neon<gelu4, gelu_ref>,
  };
}

}  // namespace
}  // namespace tzero::arm
