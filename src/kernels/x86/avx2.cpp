// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; run only when CPUID says so).
#include "kernels/kernel_set.h"
#include "kernels/x86/kernels_impl.h"

namespace tzero {

namespace {
struct Avx2 {
  template <typename W>
  static float dot16(const W* w, const float* x, size_t n, bool bf16) {
    return x86::dot16(w, x, n, bf16);
  }
  // 8 int32 partial sums of the 32 products |w| * sign(x, w) of one block (exact: |w| <= 128,
  // |x| <= 127, so the int16 pair sums of maddubs cannot saturate).
  static __m256i q8_partial(__m256i abs_w, __m256i signed_x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_x), _mm256_set1_epi16(1));
  }
};
}  // namespace

const KernelSet& avx2_kernels() {
  static const KernelSet set = x86::make_kernel_set<Avx2>("avx2");
  return set;
}

}  // namespace tzero
