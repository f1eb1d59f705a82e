// aarch64 kernel selection (kernels/kernel_isa.h): getauxval's HWCAP bits decide which of the
// neon sets (kernels/arm/) this CPU runs. "neon" needs Advanced SIMD (every aarch64 Linux CPU has
// it); "neon-dotprod" also SDOT (FEAT_DotProd, HWCAP_ASIMDDP: Cortex-A76 / Neoverse N1 and later).
#include <sys/auxv.h>

#include "base/error.h"
#include "kernels/kernel_isa.h"
#include "kernels/kernel_set.h"

// The HWCAP bits of the Linux aarch64 ABI (asm/hwcap.h), for C libraries whose headers lack them.
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif

namespace tzero {

namespace {
struct CpuFeatures {
  bool neon = false, dotprod = false;
};

CpuFeatures detect_cpu() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP);
  f.neon = hw & HWCAP_ASIMD;
  f.dotprod = f.neon && (hw & HWCAP_ASIMDDP);
  return f;
}
}  // namespace

std::vector<const KernelSet*> isa_kernels(bool) {
  const CpuFeatures f = detect_cpu();
  std::vector<const KernelSet*> v;
  if (f.neon) v.push_back(&neon_kernels());
  if (f.dotprod) v.push_back(&neon_dotprod_kernels());
  return v;
}

const KernelSet* isa_select(const std::string& choice) {
  if (choice != "neon" && choice != "neon-dotprod") return nullptr;
  for (const KernelSet* k : isa_kernels(false))
    if (choice == k->name) return k;
  throw Error("--kernels " + choice + ": this CPU lacks the instructions (" +
              (choice == "neon" ? "Advanced SIMD" : "Advanced SIMD, SDOT (HWCAP_ASIMDDP)") + ")");
}

const char* isa_arch() {
  return "aarch64";
}
const char* isa_names() {
  return "neon, neon-dotprod";
}

}  // namespace tzero
