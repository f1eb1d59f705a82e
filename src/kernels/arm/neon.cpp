// The neon set: Advanced SIMD of armv8-a, which every aarch64 CPU has (kernels/arm/select_arm.cpp).
// Its int8 block sums are widening multiplies (SMULL) added pairwise (SADALP).
#include "kernels/arm/kernels_neon.h"

namespace tzero {

const KernelSet& neon_kernels() {
  static const KernelSet set = arm::make_neon_set<arm::Int8Neon>("neon");
  return set;
}

}  // namespace tzero
