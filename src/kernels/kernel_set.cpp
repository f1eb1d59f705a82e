#include "kernels/kernel_set.h"

#include <cpuid.h>

#include <type_traits>

#include "base/error.h"
#include "kernels/dot.h"
#include "kernels/ops.h"

namespace tzero {

namespace {

template <typename W, typename X, float (*Dot)(const W*, const X*, size_t)>
void gemm_ref(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
              size_t n_tok, float* y, size_t ldy) {
  const size_t x_row = std::is_same_v<X, float>   ? n_cols
                       : std::is_same_v<X, ActQ8> ? n_cols / kQBlock
                                                  : n_cols / kSuperBlock;
  for (size_t r = 0; r < n_rows; ++r) {
    const W* wr = reinterpret_cast<const W*>(w + r * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t)
      y[t * ldy + r] = Dot(wr, static_cast<const X*>(x) + t * x_row, n_cols);
  }
}

// CPUID and XGETBV directly (clang 14 lacks some __builtin_cpu_supports names, e.g. f16c):
// the instructions must exist and the OS must save the register state they use.
struct CpuFeatures {
  bool avx2 = false, avx512 = false;
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
  return f;
}

bool cpu_has_avx2() {
  return detect_cpu().avx2;
}
bool cpu_has_avx512() {
  return detect_cpu().avx512;
}

}  // namespace

GemmFn KernelSet::gemm_for(TensorType t) const {
  switch (t) {
    case TensorType::F32:
      return gemm_f32;
    case TensorType::F16:
      return gemm_f16;
    case TensorType::BF16:
      return gemm_bf16;
    case TensorType::Q8_0:
      return gemm_q8_0;
    case TensorType::Q4_0:
      return gemm_q4_0;
    case TensorType::Q4_K:
      return gemm_q4_k;
    case TensorType::Q6_K:
      return gemm_q6_k;
    default:
      return nullptr;
  }
}

const KernelSet& scalar_kernels() {
  static const KernelSet set = {
      "scalar",
      gemm_ref<float, float, dot_f32_ref>,
      gemm_ref<uint16_t, float, dot_f16_ref>,
      gemm_ref<uint16_t, float, dot_bf16_ref>,
      gemm_ref<BlockQ8_0, ActQ8, dot_q8_0_ref>,
      gemm_ref<BlockQ4_0, ActQ8, dot_q4_0_ref>,
      gemm_ref<BlockQ4_K, ActQ8K, dot_q4_k_ref>,
      gemm_ref<BlockQ6_K, ActQ8K, dot_q6_k_ref>,
      quantize_act_q8,
      quantize_act_q8k,
      dot_f32_ref,
      rmsnorm_ref,
      attn_scores_ref,
      attn_block_ref,
      swiglu_ref,
  };
  return set;
}

std::vector<const KernelSet*> available_kernels() {
  std::vector<const KernelSet*> v = {&scalar_kernels()};
  if (cpu_has_avx2()) v.push_back(&avx2_kernels());
  if (cpu_has_avx512()) v.push_back(&avx512_kernels());
  return v;
}

const KernelSet& select_kernels(const std::string& choice) {
  const auto avail = available_kernels();
  if (choice == "auto") return *avail.back();
  for (const KernelSet* k : avail)
    if (choice == k->name) return *k;
  if (choice == "avx2" || choice == "avx512")
    throw Error("--kernels " + choice + ": this CPU lacks the instructions (" +
                (choice == "avx2" ? "AVX2, FMA, F16C" : "AVX-512 F, BW, VL, DQ, VNNI") + ")");
  throw Error("--kernels: unknown kernel set '" + choice + "' (scalar, avx2, avx512, auto)");
}

}  // namespace tzero
