// Kernel selection on an architecture without SIMD kernels here (neither x86-64 nor aarch64):
// the scalar reference only (kernels/kernel_isa.h).
#include "kernels/kernel_isa.h"

namespace tzero {

std::vector<const KernelSet*> isa_kernels(bool) {
  return {};
}
const KernelSet* isa_select(const std::string&) {
  return nullptr;
}
const char* isa_arch() {
  return "an architecture without SIMD kernels in tzero";
}
const char* isa_names() {
  return "no SIMD set";
}

}  // namespace tzero
