// The neon-dotprod set: the neon kernels whose int8 block sums are SDOT (FEAT_DotProd; compiled
// with -march=armv8.2-a+dotprod, run only after HWCAP_ASIMDDP: kernels/arm/select_arm.cpp). SDOT
// adds four exact int8 products into each int32 lane: the same integers, so the same bits.
#include "kernels/arm/kernels_neon.h"

namespace tzero {

const KernelSet& neon_dotprod_kernels() {
  static const KernelSet set = arm::make_neon_set<arm::Int8Sdot>("neon-dotprod");
  return set;
}

}  // namespace tzero
