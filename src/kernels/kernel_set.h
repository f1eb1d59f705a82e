// The kernel variants and their selection. Every variant computes the canonical orders of
// dot.h, ops.h and math.h, so all of them return the same bits (DETERMINISM.md, L4); they
// differ only in speed. The set is chosen once, from the CPU's feature bits (CPUID on x86-64,
// HWCAP on aarch64: kernels/kernel_isa.h) or from --kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"
#include "kernels/weight_layout.h"

namespace tzero {

// y[t * ldy + r] = dot(weight row r, activation row t) for r < n_rows, t < n_tok.
// w: n_rows rows of w_row_bytes; x: n_tok activation rows, f32 (n_cols floats each) for float
// weights, ActQ8 (n_cols / 32 blocks each) for the 32-element block types (q8_0, q4_0, q4_1,
// q5_0, q5_1, iq4_nl, mxfp4: takes_act_q8), ActQ8K (n_cols / 256 blocks each) for q4_k, q5_k,
// q6_k, q2_k, q3_k and iq4_xs weights.
using GemmFn = void (*)(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                        size_t n_rows, size_t n_tok, float* y, size_t ldy);

struct KernelSet {
  // "scalar"; x86-64: "avx2", "avx512", "amx" (and "amx-emu", never auto); aarch64: "neon",
  // "neon-dotprod", "neon-i8mm"
  const char* name;
  GemmFn gemm_f32, gemm_f16, gemm_bf16, gemm_q8_0, gemm_q4_0, gemm_q4_k, gemm_q5_k, gemm_q6_k;
  GemmFn gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_iq4_nl, gemm_mxfp4;  // ActQ8 activations
  GemmFn gemm_q2_k, gemm_q3_k, gemm_iq4_xs;  // ActQ8K activations, as the K-quants
  void (*quantize_act_q8)(const float* x, ActQ8* dst, size_t n);
  void (*quantize_act_q8k)(const float* x, ActQ8K* dst, size_t n);
  float (*dot_f32)(const float* a, const float* b, size_t n);
  void (*rmsnorm)(const float* x, const float* w, float eps, size_t n, float* out);
  // attn-v2 pieces, the contracts of attn_scores_ref and attn_block_ref (kernels/attention.h);
  // kernels/attention_heads.h runs them over a whole position range.
  void (*attn_scores)(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                      size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m);
  void (*attn_block)(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                     size_t t1, size_t head_dim, float* z, float* o, size_t o_stride);
  void (*swiglu)(const float* gate, const float* up, size_t n, float* out);
  void (*geglu)(const float* gate, const float* up, size_t n, float* out);
  // delta_rule_rows of kernels/delta_net.h (delta-v1) in one pass per step over each state row,
  // or null: the backend runs delta_rule_rows over dot_f32 (the same bits).
  void (*delta_rows)(float* S, size_t d_k, size_t j0, size_t j1, const float* q, const float* k,
                     const float* v, float g, float beta, float scale, float* out) = nullptr;

  // The gemms over rows in WeightLayout::Blocks8 (kernels/weight_layout.h), for the types this
  // set reads that way; null for the others, whose products with such rows unpack them to the
  // file's layout for gemm_for's kernel (MatrixGemm in kernels/matmul.h): the same bits.
  GemmFn blocks8_q8_0 = nullptr, blocks8_q4_0 = nullptr, blocks8_q4_1 = nullptr,
         blocks8_q5_0 = nullptr, blocks8_q5_1 = nullptr, blocks8_iq4_nl = nullptr,
         blocks8_mxfp4 = nullptr;
  // The gemms over Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K and Q3_K rows in WeightLayout::Rows16
  // (kernels/rows16.h: 16 rows interleaved), for every token count, called on whole panels only
  // (MatrixGemm hands a matrix's last n_rows % 16 rows, in the file's layout, to gemm_for's
  // kernel); null where the set has none (the rows are then unpacked, as above). The loader lays a
  // type out as Rows16 only for a set that has its kernel.
  GemmFn rows16_q4_k = nullptr, rows16_q5_k = nullptr, rows16_q6_k = nullptr,
         rows16_iq4_xs = nullptr, rows16_q2_k = nullptr, rows16_q3_k = nullptr;

  GemmFn gemm_for(TensorType t) const;          // nullptr for types without a matmul
  GemmFn gemm_blocks8_for(TensorType t) const;  // nullptr where the set has none
  GemmFn gemm_rows16_for(TensorType t) const;   // nullptr where the set has none
  // The field of the kernel for rows of type t in layout l (Blocks8 or Rows16), or nullptr where
  // the layout has no kernel slot for t.
  GemmFn* layout_slot(WeightLayout l, TensorType t);
  void drop_blocks8(TensorType t);  // its Blocks8 and Rows16 kernels null (--op overrides)

 private:
  template <typename S>
  static auto layout_slot_of(S& set, WeightLayout l, TensorType t) -> decltype(&set.blocks8_q8_0);
};

const KernelSet& scalar_kernels();
// The variants this CPU can run, best last ("scalar" always first).
std::vector<const KernelSet*> available_kernels();
// "auto" picks the best available; otherwise the named set, or tzero::Error ("--kernels NAME:
// why") when this build (another architecture's set) or this CPU cannot run it.
const KernelSet& select_kernels(const std::string& choice);

// Defined in kernels/x86/*.cpp (x86-64 builds only), compiled with the matching -m flags; call
// only after checking the CPU through available_kernels().
const KernelSet& avx2_kernels();
const KernelSet& avx512_kernels();

// Defined in kernels/arm/*.cpp (aarch64 builds only). neon: Advanced SIMD (armv8-a, every
// aarch64 CPU); neon-dotprod: the neon set whose int8 block sums use SDOT (armv8.2-a+dotprod,
// compiled with that -march; only after HWCAP_ASIMDDP); neon-i8mm: the neon-dotprod set whose
// gemms of the 32-element types with Q4_0's order take their block sums from SMMLA
// (armv8.2-a+dotprod+i8mm; only after HWCAP2_I8MM too).
const KernelSet& neon_kernels();
const KernelSet& neon_dotprod_kernels();
const KernelSet& neon_i8mm_kernels();

// x86-64 builds only (kernels/x86/select_x86.cpp, amx.cpp): the AMX set and its checks.
// AMX-INT8 (kernels/x86/amx.cpp, amx_gemm.h): the avx512 set whose Q8_0 and Q4_0 gemms of 16
// tokens or more take their int8 block sums from AMX tiles; the same bits. available_kernels()
// offers it only when amx_usable(): CPUID AMX-TILE and AMX-INT8 (and the avx512 set), XCR0
// enables the tile state, arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) grants it to the process,
// and amx_tiles_self_check() matches the scalar reference's bits. When the CPU has AMX but a
// step fails, one line on stderr says why (once per process). why: the reason when false.
bool amx_usable(std::string* why = nullptr);
// Runs check(why) in a forked child first: false (and *why) when the child dies of a signal, so
// an untested instruction path can fault without taking the process down; otherwise true (the
// caller then runs the check in process for its answer). Used for the AMX self-check.
bool survives_in_child(bool (*check)(std::string* why), std::string* why);
const KernelSet& amx_kernels();  // only after amx_usable()
// The same set over the scalar tile emulator (kernels/x86/amx_tiles.h): the AMX code path on any
// CPU with the avx512 set, slowly. For tests and `--kernels amx-emu`; never chosen by "auto".
const KernelSet& amx_emulated_kernels();
// amx.cpp: whether the compiler had the AMX intrinsics; the self-check gemm on the real tiles
// (only after the CPUID, XCR0 and arch_prctl checks: a tile instruction faults without them).
bool amx_built();
bool amx_tiles_self_check(std::string* why);
// Test hook: the self-check over the emulator, or over an emulator with a wrong TDPBSSD
// (broken = true, which the self-check must refuse). Needs the avx512 set.
bool amx_self_check_emulated(bool broken, std::string* why);
// Test hook: the emulated tile gemm itself for Q8_0 or Q4_0 (any batch, no fallback to the
// avx512 kernels below 16 tokens); nullptr for other types. Needs the avx512 set.
GemmFn amx_emulated_tile_gemm(TensorType t);

}  // namespace tzero
