// The neon-dotprod set: the neon kernels whose int8 block sums are SDOT (FEAT_DotProd; compiled
// with -march=armv8.2-a+dotprod, run only after HWCAP_ASIMDDP: kernels/arm/select_arm.cpp). SDOT
// adds four exact int8 products into each int32 lane: the same integers, so the same bits.
#include "kernels/arm/kernels_neon.h"

namespace tzero {

namespace {
struct Int8Sdot {
  static int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }
};
}  // namespace

const KernelSet& neon_dotprod_kernels() {
  static const KernelSet set = arm::make_neon_set<Int8Sdot>("neon-dotprod");
  return set;
}

}  // namespace tzero
