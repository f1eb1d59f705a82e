// aarch64 kernel selection (kernels/kernel_isa.h): getauxval's HWCAP bits decide which of the
// neon sets (kernels/arm/) this CPU runs. "neon" needs Advanced SIMD (every aarch64 Linux CPU has
// it); "neon-dotprod" also SDOT (FEAT_DotProd, HWCAP_ASIMDDP: Cortex-A76 / Neoverse N1 and later);
// "neon-i8mm" also SMMLA (FEAT_I8MM, HWCAP2_I8MM: Neoverse V1 / N2, Graviton 3 and later).
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
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif

namespace tzero {

namespace {
struct CpuFeatures {
  bool neon = false, dotprod = false, i8mm = false;
};

CpuFeatures detect_cpu() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP);
  f.neon = hw & HWCAP_ASIMD;
  f.dotprod = f.neon && (hw & HWCAP_ASIMDDP);
  f.i8mm = f.dotprod && (getauxval(AT_HWCAP2) & HWCAP2_I8MM);
  return f;
}
}  // namespace

std::vector<const KernelSet*> isa_kernels(bool) {
  const CpuFeatures f = detect_cpu();
  std::vector<const KernelSet*> v;
  if (f.neon) v.push_back(&neon_kernels());
  if (f.dotprod) v.push_back(&neon_dotprod_kernels());
  if (f.i8mm) v.push_back(&neon_i8mm_kernels());
  return v;
}

const KernelSet* isa_select(const std::string& choice) {
  if (choice != "neon" && choice != "neon-dotprod" && choice != "neon-i8mm") return nullptr;
  for (const KernelSet* k : isa_kernels(false))
    if (choice == k->name) return k;
  throw Error("--kernels " + choice + ": this CPU lacks the instructions (" +
              (choice == "neon" ? "Advanced SIMD"
               : choice == "neon-dotprod"
                   ? "Advanced SIMD, SDOT (HWCAP_ASIMDDP)"
                   : "Advanced SIMD, SDOT, SMMLA (HWCAP_ASIMDDP, HWCAP2_I8MM)") +
              ")");
}

const char* isa_arch() {
  return "aarch64";
}
const char* isa_names() {
  return "neon, neon-dotprod, neon-i8mm";
}

}  // namespace tzero
