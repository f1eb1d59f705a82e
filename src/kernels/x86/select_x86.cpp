// x86-64 kernel selection (kernels/kernel_isa.h): CPUID and XGETBV decide which of the avx2,
// avx512 and AMX sets (kernels/x86/) this CPU runs; AMX also needs the OS's permission and a
// self-check gemm (kernel_set.h).
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "kernels/kernel_isa.h"
#include "kernels/kernel_set.h"
#include "kernels/x86/decode_rows.h"

namespace tzero {

namespace {

// CPUID and XGETBV directly (clang 14 lacks some __builtin_cpu_supports names, e.g. f16c):
// the instructions must exist and the OS must save the register state they use.
struct CpuFeatures {
  bool avx2 = false, avx512 = false;
  bool amx_int8 = false;  // CPUID AMX-TILE and AMX-INT8 (the OS side: amx_os)
  bool amx_os = false;    // XCR0 enables XTILECFG and XTILEDATA
};

CpuFeatures detect_cpu() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_avx = (xcr0_lo & 0x6) == 0x6;       // XMM and YMM state
  const bool os_avx512 = (xcr0_lo & 0xe6) == 0xe6;  // and opmask, ZMM_Hi256, Hi16_ZMM
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = b & (1u << 5), avx512f = b & (1u << 16), avx512dq = b & (1u << 17),
             avx512bw = b & (1u << 30), avx512vl = b & (1u << 31), vnni = c & (1u << 11);
  f.avx2 = os_avx && avx2 && fma && f16c;
  f.avx512 = f.avx2 && os_avx512 && avx512f && avx512dq && avx512bw && avx512vl && vnni;
  f.amx_int8 = (d & (1u << 24)) && (d & (1u << 25));  // leaf 7 EDX: AMX-TILE, AMX-INT8
  f.amx_os = (xcr0_lo & 0x60000) == 0x60000;          // XCR0 bit 17 XTILECFG, 18 XTILEDATA
  return f;
}

bool cpu_has_avx2() {
  return detect_cpu().avx2;
}
bool cpu_has_avx512() {
  return detect_cpu().avx512;
}

struct AmxStatus {
  bool ok = false;
  bool cpu = false;  // the CPU has the instructions (and the avx512 set)
  std::string why;
};

// Linux: the tile data state is off until the process asks for it (kernel 5.16+); without the
// permission the first tile instruction raises SIGILL. The permission is per process.
bool request_tile_permission(std::string* why) {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return true;
  const int err = errno;
  *why = std::string("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed: ") + std::strerror(err) +
         (err == ENOSPC ? " (a thread's sigaltstack is too small for the tile state)"
                        : " (the kernel does not grant the tile state; it needs Linux 5.16+)");
  return false;
#else
  *why = "no way to request the tile state on this OS";
  return false;
#endif
}

// The tile permission and the self-check: the real tile path has not yet run on hardware
// (docs/BENCHMARKS.md, "AMX"), so survives_in_child tries them first.
bool tiles_permitted_and_checked(std::string* why) {
  return request_tile_permission(why) && amx_tiles_self_check(why);
}

AmxStatus check_amx() {
  AmxStatus s;
  const CpuFeatures f = detect_cpu();
  if (!amx_built()) {
    s.why = "this build's compiler has no AMX intrinsics (-mamx-tile -mamx-int8)";
    return s;
  }
  if (!f.amx_int8) {
    s.why = "this CPU lacks the instructions (AMX-TILE, AMX-INT8)";
    return s;
  }
  if (!f.avx512) {
    s.why = "this CPU lacks the instructions of the avx512 set the AMX kernels build on";
    return s;
  }
  s.cpu = true;
  if (!f.amx_os) {
    s.why = "the OS does not enable the tile state (XCR0 bits 17-18)";
    return s;
  }
  if (std::getenv("TZ_NO_AMX")) {
    s.why = "TZ_NO_AMX is set";
    return s;
  }
  if (!survives_in_child(tiles_permitted_and_checked, &s.why)) return s;
  if (!request_tile_permission(&s.why)) return s;
  if (!amx_tiles_self_check(&s.why)) return s;
  s.ok = true;
  return s;
}

const AmxStatus& amx_status() {
  static const AmxStatus s = [] {
    AmxStatus r = check_amx();
    if (r.cpu && !r.ok) std::fprintf(stderr, "tzero: AMX not used: %s\n", r.why.c_str());
    return r;
  }();
  return s;
}

// Where the decode kernels walk 4 row ranges side by side (decode_rows.h): Intel, and AMD from
// Zen 5 (family 0x1A) on. Zen 4 (family 0x19) read one F16 row from memory at 19 GB/s and 2-8
// side by side at 12-15; Zen 5 reads side by side faster (docs/BENCHMARKS.md, "Fourth session").
// Other vendors, and AMD before Zen 5, one row at a time.
bool side_by_side_suits_cpu() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  char vendor[13];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  if (std::strcmp(vendor, "GenuineIntel") == 0) return true;
  if (std::strcmp(vendor, "AuthenticAMD") != 0 || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned family = ((a >> 8) & 0xf) == 0xf ? 0xf + ((a >> 20) & 0xff) : (a >> 8) & 0xf;
  return family >= 0x1a;
}

bool& side_by_side_flag() {
  static bool on = [] {
    const char* e = std::getenv("TZ_DECODE_ROWS");
    if (e && std::strcmp(e, "side") == 0) return true;
    if (e && std::strcmp(e, "one") == 0) return false;
    if (e && *e) std::fprintf(stderr, "tzero: TZ_DECODE_ROWS=%s ignored (side or one)\n", e);
    return side_by_side_suits_cpu();
  }();
  return on;
}

}  // namespace

namespace x86 {
bool decode_rows_side_by_side() {
  return side_by_side_flag();
}
void set_decode_rows_side_by_side(bool on) {
  side_by_side_flag() = on;
}
}  // namespace x86

bool amx_usable(std::string* why) {
  const AmxStatus& s = amx_status();
  if (why) *why = s.why;
  return s.ok;
}

std::vector<const KernelSet*> isa_kernels(bool with_checked) {
  std::vector<const KernelSet*> v;
  if (cpu_has_avx2()) v.push_back(&avx2_kernels());
  if (cpu_has_avx512()) v.push_back(&avx512_kernels());
  // Named sets other than amx never run the AMX checks (nor their child process).
  if (with_checked && cpu_has_avx512() && amx_usable()) v.push_back(&amx_kernels());
  return v;
}

const KernelSet* isa_select(const std::string& choice) {
  if (choice == "avx2" || choice == "avx512") {
    for (const KernelSet* k : isa_kernels(false))
      if (choice == k->name) return k;
    throw Error("--kernels " + choice + ": this CPU lacks the instructions (" +
                (choice == "avx2" ? "AVX2, FMA, F16C" : "AVX-512 F, BW, VL, DQ, VNNI") + ")");
  }
  if (choice == "amx") {
    for (const KernelSet* k : isa_kernels(true))
      if (choice == k->name) return k;
    std::string why;
    amx_usable(&why);
    throw Error("--kernels amx: " + why);
  }
  if (choice == "amx-emu") {  // the AMX kernels over the tile emulator: slow, same bits
    if (cpu_has_avx512()) return &amx_emulated_kernels();
    throw Error(
        "--kernels amx-emu: this CPU lacks the instructions of the avx512 set (AVX-512 F, BW, "
        "VL, DQ, VNNI) that the emulated AMX kernels build on");
  }
  return nullptr;
}

const char* isa_arch() {
  return "x86-64";
}
const char* isa_names() {
  return "avx2, avx512, amx, amx-emu";
}

}  // namespace tzero
