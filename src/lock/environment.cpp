#include "lock/environment.h"

#include <sys/utsname.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#elif defined(__x86_64__)
#include <cpuid.h>
#endif

#include <fstream>

#include "kernels/kernel_set.h"

namespace tzero::lock {

namespace {
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown";
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return "unknown";
#endif
}
}  // namespace

nlohmann::json environment_json(const std::string& kernel_variant) {
  nlohmann::json cpu = {{"model", cpu_model()}};
  nlohmann::json features = nlohmann::json::array();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) features.push_back("avx2");
  if (__builtin_cpu_supports("fma")) features.push_back("fma");
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports has no "f16c", and
  // `make fuzz` builds this file with clang.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29))) features.push_back("f16c");
  if (__builtin_cpu_supports("avx512f")) features.push_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) features.push_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) features.push_back("avx512vl");
  if (__builtin_cpu_supports("avx512vnni")) features.push_back("avx512vnni");
#elif defined(__aarch64__)
  // The Linux aarch64 HWCAP bits (asm/hwcap.h): Advanced SIMD, SDOT, and (AT_HWCAP2) I8MM.
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (hw & (1UL << 1)) features.push_back("asimd");
  if (hw & (1UL << 20)) features.push_back("asimddp");
  if (hw2 & (1UL << 13)) features.push_back("i8mm");
#endif
  cpu["features"] = features;
  nlohmann::json variants = nlohmann::json::array();
  for (const KernelSet* k : available_kernels()) variants.push_back(k->name);
  cpu["kernel_variants"] = variants;
  if (!kernel_variant.empty()) cpu["kernel_variant"] = kernel_variant;
  utsname u{};
  std::string os = "unknown";
  if (uname(&u) == 0) os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return {{"tzero", std::string("tzero ") + TZ_VERSION},
          {"cpu", cpu},
          {"os", os},
          {"compiler", compiler()}};
}

}  // namespace tzero::lock
