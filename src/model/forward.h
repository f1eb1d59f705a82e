// The forward pass of the llama family (llama, mistral, qwen2, qwen3), straight-line code over
// a batch of consecutive tokens of one sequence. Every named intermediate passes through one
// trace hook (names as llama.cpp's graph uses them: "attn_norm", "Qcur", ..., "result_output").
//
// Contract: the logits of position p are the same bits however positions 0..p were fed (one
// batch, several chunks, one token at a time) and whatever the thread count, because every
// output element is computed by one canonical-order kernel call (kernels/dot.h, kernels/ops.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace tz {

// Called with the tensor name, the layer (-1 outside layers), the data (n_tokens rows of
// row_len floats, row-major) and the positions' first index.
using TraceHook = std::function<void(std::string_view name, int layer, const float* data,
                                     size_t n_tokens, size_t row_len, int pos0)>;

class Forward {
 public:
  // n_ctx: positions the rope table covers; n_batch: most tokens one eval() takes.
  // kernels: any variant gives the same bits (kernels/kernel_set.h).
  // fast: `--mode fast`, matmuls without the reproducibility contract (kernels/matmul.h).
  Forward(const Model& model, ThreadPool& pool, int n_ctx, int n_batch,
          const KernelSet& kernels = scalar_kernels(), bool fast = false);

  // Evaluates tokens[0..n) at positions pos..pos+n-1 (n <= n_batch, pos + n <= kv.n_ctx()),
  // stores their keys and values in kv, and writes the logits of the last one to
  // logits (n_vocab floats) when logits is not null.
  void eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits);

  void set_trace(TraceHook hook) { trace_ = std::move(hook); }
  // Test hook for the proof tools: flips the lowest bit of the first element of tensor `op` of
  // `layer` at position `pos` when the pass computes it, so its effect can be traced.
  void set_perturbation(int layer, const std::string& op, int pos) {
    perturb_ = {true, layer, op, pos};
  }
  int n_batch() const { return n_batch_; }
  const KernelSet& kernels() const { return kern_; }

 private:
  void trace(std::string_view name, int layer, float* data, size_t n, size_t len, int pos);
  void attention(int layer, int n, int pos, KvCache& kv);
  void attention_fast(int layer, int n, int pos, KvCache& kv);  // model/attention_fast.cpp
  void mm(const Matrix& w, const float* x, size_t n, float* y);

  const Model& model_;
  const HParams& hp_;
  ThreadPool& pool_;
  const KernelSet& kern_;
  bool fast_;
  int n_batch_;
  RopeTable rope_;
  TraceHook trace_;
  struct {
    bool on = false;
    int layer = 0;
    std::string op;
    int pos = 0;
  } perturb_;
  MatmulScratch mm_;
  // Activations of the batch being evaluated.
  std::vector<float> x_;     // (n_batch, n_embd) residual stream
  std::vector<float> xb_;    // (n_batch, n_embd) normed input of a block
  std::vector<float> q_;     // (n_batch, q_dim)
  std::vector<float> k_;     // (n_batch, kv_dim)
  std::vector<float> v_;     // (n_batch, kv_dim)
  std::vector<float> att_;   // (n_batch, q_dim) attention output per head
  std::vector<float> proj_;  // (n_batch, n_embd) attention or ffn projection
  std::vector<float> gate_;  // (n_batch, n_ff)
  std::vector<float> up_;    // (n_batch, n_ff)
};

}  // namespace tz
