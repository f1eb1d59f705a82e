// The scalar reference set, KernelSet::gemm_for, and the selection common to every architecture
// (the per-architecture half: kernels/kernel_isa.h).
#include "kernels/kernel_set.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "kernels/dot.h"
#include "kernels/kernel_isa.h"
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

}  // namespace

bool survives_in_child(bool (*check)(std::string* why), std::string* why) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    *why = std::string("fork for a self-check failed: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    std::string w;
    _exit(check(&w) ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    *why = "the self-check died of signal " + std::to_string(WTERMSIG(status)) +
           " in a child process (TZ_NO_AMX=1 skips the AMX one)";
    return false;
  }
  return true;
}

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
    case TensorType::Q5_K:
      return gemm_q5_k;
    case TensorType::Q6_K:
      return gemm_q6_k;
    case TensorType::Q4_1:
      return gemm_q4_1;
    case TensorType::Q5_0:
      return gemm_q5_0;
    case TensorType::Q5_1:
      return gemm_q5_1;
    case TensorType::IQ4_NL:
      return gemm_iq4_nl;
    case TensorType::MXFP4:
      return gemm_mxfp4;
    case TensorType::Q2_K:
      return gemm_q2_k;
    case TensorType::Q3_K:
      return gemm_q3_k;
    case TensorType::IQ4_XS:
      return gemm_iq4_xs;
    default:
      return nullptr;
  }
}

template <typename S>
auto KernelSet::layout_slot_of(S& set, WeightLayout l, TensorType t)
    -> decltype(&set.blocks8_q8_0) {
  if (l == WeightLayout::Rows16) {
    switch (t) {
      case TensorType::Q4_K:
        return &set.rows16_q4_k;
      case TensorType::Q5_K:
        return &set.rows16_q5_k;
      case TensorType::Q6_K:
        return &set.rows16_q6_k;
      case TensorType::IQ4_XS:
        return &set.rows16_iq4_xs;
      case TensorType::Q2_K:
        return &set.rows16_q2_k;
      case TensorType::Q3_K:
        return &set.rows16_q3_k;
      default:
        return nullptr;
    }
  }
  if (l != WeightLayout::Blocks8) return nullptr;
  switch (t) {
    case TensorType::Q8_0:
      return &set.blocks8_q8_0;
    case TensorType::Q4_0:
      return &set.blocks8_q4_0;
    case TensorType::Q4_1:
      return &set.blocks8_q4_1;
    case TensorType::Q5_0:
      return &set.blocks8_q5_0;
    case TensorType::Q5_1:
      return &set.blocks8_q5_1;
    case TensorType::IQ4_NL:
      return &set.blocks8_iq4_nl;
    case TensorType::MXFP4:
      return &set.blocks8_mxfp4;
    default:
      return nullptr;
  }
}

GemmFn KernelSet::gemm_blocks8_for(TensorType t) const {
  const GemmFn* slot = layout_slot_of(*this, WeightLayout::Blocks8, t);
  return slot ? *slot : nullptr;
}

GemmFn KernelSet::gemm_rows16_for(TensorType t) const {
  const GemmFn* slot = layout_slot_of(*this, WeightLayout::Rows16, t);
  return slot ? *slot : nullptr;
}

GemmFn* KernelSet::layout_slot(WeightLayout l, TensorType t) {
  return layout_slot_of(*this, l, t);
}

void KernelSet::drop_blocks8(TensorType t) {
  for (WeightLayout l : {WeightLayout::Blocks8, WeightLayout::Rows16})
    if (GemmFn* slot = layout_slot(l, t)) *slot = nullptr;
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
      gemm_ref<BlockQ5_K, ActQ8K, dot_q5_k_ref>,
      gemm_ref<BlockQ6_K, ActQ8K, dot_q6_k_ref>,
      gemm_ref<BlockQ4_1, ActQ8, dot_q4_1_ref>,
      gemm_ref<BlockQ5_0, ActQ8, dot_q5_0_ref>,
      gemm_ref<BlockQ5_1, ActQ8, dot_q5_1_ref>,
      gemm_ref<BlockIQ4_NL, ActQ8, dot_iq4_nl_ref>,
      gemm_ref<BlockMXFP4, ActQ8, dot_mxfp4_ref>,
      gemm_ref<BlockQ2_K, ActQ8K, dot_q2_k_ref>,
      gemm_ref<BlockQ3_K, ActQ8K, dot_q3_k_ref>,
      gemm_ref<BlockIQ4_XS, ActQ8K, dot_iq4_xs_ref>,
      quantize_act_q8,
      quantize_act_q8k,
      dot_f32_ref,
      rmsnorm_ref,
      attn_scores_ref,
      attn_block_ref,
      swiglu_ref,
      geglu_ref,
  };
  return set;
}

std::vector<const KernelSet*> available_kernels() {
  std::vector<const KernelSet*> v = {&scalar_kernels()};
  for (const KernelSet* k : isa_kernels(true)) v.push_back(k);
  return v;
}

const KernelSet& select_kernels(const std::string& choice) {
  if (choice == "auto") return *available_kernels().back();
  if (choice == "scalar") return scalar_kernels();
  if (const KernelSet* k = isa_select(choice)) return *k;
  // Another architecture's set: say so (the form "--kernels NAME: why" of an unavailable set).
  for (const char* name : {"avx2", "avx512", "amx", "amx-emu"})
    if (choice == name)
      throw Error("--kernels " + choice + ": an x86-64 kernel set, and this build is for " +
                  isa_arch());
  for (const char* name : {"neon", "neon-dotprod", "neon-i8mm"})
    if (choice == name)
      throw Error("--kernels " + choice + ": an aarch64 kernel set, and this build is for " +
                  isa_arch());
  throw Error("--kernels: unknown kernel set '" + choice + "' (scalar, " + isa_names() + ", auto)");
}

}  // namespace tzero
