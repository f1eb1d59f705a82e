// The neon-i8mm set: the neon-dotprod set whose Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 gemms take
// their int8 block sums from SMMLA (FEAT_I8MM; compiled with -march=armv8.2-a+dotprod+i8mm, run
// only after HWCAP_ASIMDDP and HWCAP2_I8MM: kernels/arm/select_arm.cpp). The same integers, so
// the same bits (kernels/arm/gemm_i8mm.h).
#include "kernels/arm/gemm_i8mm.h"
#include "kernels/arm/kernels_neon.h"

namespace tzero {

const KernelSet& neon_i8mm_kernels() {
  static const KernelSet set = [] {
    KernelSet s = arm::make_neon_set<arm::Int8Sdot>("neon-i8mm");
    s.gemm_q8_0 = arm::gemm_q32_i8mm<arm::Int8Sdot, BlockQ8_0>;
    s.gemm_q4_0 = arm::gemm_q32_i8mm<arm::Int8Sdot, BlockQ4_0>;
    s.gemm_q5_0 = arm::gemm_q32_i8mm<arm::Int8Sdot, BlockQ5_0>;
    s.gemm_iq4_nl = arm::gemm_q32_i8mm<arm::Int8Sdot, BlockIQ4_NL>;
    s.gemm_mxfp4 = arm::gemm_q32_i8mm<arm::Int8Sdot, BlockMXFP4>;
    return s;
  }();
  return set;
}

}  // namespace tzero
