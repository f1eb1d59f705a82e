// The expert matrix products of a mixture-of-experts layer, grouped by expert: the tokens that
// chose expert e are gathered and multiplied by W[e] in one batched product, so each chosen
// expert's weights are read once per pass and the experts nobody chose are never read.
//
// Contract: every output element is one dot product (dot-v1 of the weight type) computed by one
// thread with the batched kernels of kernels/kernel_set.h, which are row-local: which other
// tokens chose the same expert, the grouping, the thread count and the kernel variant never
// change a bit (KernelVariants.ExpertMatmul*, MoeMatmul.*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/matrix.h"

namespace tzero {

// Reusable buffers of matmul_experts.
struct ExpertScratch {
  MatmulScratch quant;              // the activations as the weight type's kernels take them
  std::vector<uint8_t> gathered;    // (slots, act row bytes) activation rows grouped by expert
  std::vector<float> grouped;       // (slots, n_rows) outputs grouped by expert
  std::vector<int32_t> slot_order;  // (slots) slots grouped by expert, ascending within
  std::vector<int32_t> start;       // (n_expert + 1) each expert's first index in slot_order
  std::vector<int32_t> fill;        // (n_expert) the counting sort's cursors
  struct Unit {                     // kRowChunk weight rows of one chosen expert
    uint32_t expert, r0, r1;
    size_t cost_end;  // cumulative cost through this unit
  };
  std::vector<Unit> units;  // the pass's units in (expert, rows) order
};

// Slots s = t * k + j (token t, rank j), ids[s] the expert of slot s (0 <= ids[s] < n_expert,
// or negative: a slot left out, its row of y untouched: an expert on another rank,
// docs/DISTRIBUTED.md "Expert parallelism").
// y (n_tok * k, w.n_rows): y row s = W[ids[s]] times x row (x_per_slot ? s : t), where x is
// (n_tok, w.n_cols) or, per slot, (n_tok * k, w.n_cols).
void matmul_experts(ThreadPool& pool, const KernelSet& kernels, const ExpertMatrix& w,
                    const float* x, bool x_per_slot, const int32_t* ids, size_t n_tok, size_t k,
                    float* y, ExpertScratch& scratch);

// The same one slot at a time with the scalar reference (for tests).
void matmul_experts_ref(const ExpertMatrix& w, const float* x, bool x_per_slot, const int32_t* ids,
                        size_t n_tok, size_t k, float* y);

}  // namespace tzero
