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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace tzero {

class DeviceLayers;  // backend/backend.h

// Called with the tensor name, the layer (-1 outside layers), the data (n_tokens rows of
// row_len floats, row-major) and the positions' first index.
using TraceHook = std::function<void(std::string_view name, int layer, const float* data,
                                     size_t n_tokens, size_t row_len, int pos0)>;

// Tokens of one or more sequences evaluated in one pass (continuous batching). Each token
// attends to the positions 0..pos of its own sequence, whose keys and values live in the store
// at the blocks of that sequence's table. Tokens of one sequence appear in increasing position
// order, and the store already holds their earlier positions.
struct ForwardBatch {
  std::vector<int32_t> tokens;         // (n)
  std::vector<int32_t> pos;            // (n) position of each token in its sequence
  std::vector<int32_t> seq;            // (n) index into tables
  std::vector<const int32_t*> tables;  // (n_seqs) block table of each sequence
  std::vector<int32_t> logits_rows;    // token indices whose logits are wanted, in output order

  void clear() { tokens.clear(), pos.clear(), seq.clear(), tables.clear(), logits_rows.clear(); }
  void add(int32_t token, int32_t position, int32_t seq_index, bool want_logits) {
    if (want_logits) logits_rows.push_back(int32_t(tokens.size()));
    tokens.push_back(token), pos.push_back(position), seq.push_back(seq_index);
  }
};

class Forward {
 public:
  // n_ctx: positions the rope table covers; n_batch: most tokens one eval() takes.
  // kernels: any variant gives the same bits (kernels/kernel_set.h).
  // fast: `--mode fast`, matmuls without the reproducibility contract (kernels/matmul.h).
  Forward(const Model& model, ThreadPool& pool, int n_ctx, int n_batch,
          const KernelSet& kernels = scalar_kernels(), bool fast = false);
  ~Forward();

  // Runs the last gpu_layers layers (and the output head) on the CUDA backend
  // (backend/backend.h); 0 keeps everything on the CPU. Uploads their weights now. Throws
  // tzero::Error when this build has no CUDA or the machine no usable device.
  void offload(int gpu_layers);
  const DeviceLayers* device() const { return dev_.get(); }

  // Evaluates tokens[0..n) at positions pos..pos+n-1 (n <= n_batch, pos + n <= kv.n_ctx()),
  // stores their keys and values in kv, and writes the logits of the last one to
  // logits (n_vocab floats) when logits is not null.
  void eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits);

  // Evaluates a batch of up to n_batch tokens of any sequences, stores their keys and values
  // in kv, and writes the logits rows the batch asks for to logits ((logits_rows, n_vocab)).
  // Each row's bits are those the sequence would get alone: every kernel computes each output
  // element in its canonical order whatever else shares the batch. Traces only single-sequence
  // batches (eval).
  void eval_batch(const ForwardBatch& batch, KvStore& kv, float* logits);

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
  // Key/value rows of each (sequence, kv head) of the batch for one layer.
  void gather_kv_rows(const ForwardBatch& b, int layer, const KvStore& kv);
  const KvRows& k_rows(int seq, int kv_head) const {
    return seq_rows_[(size_t(seq) * size_t(hp_.n_head_kv) + size_t(kv_head)) * 2];
  }
  const KvRows& v_rows(int seq, int kv_head) const {
    return seq_rows_[(size_t(seq) * size_t(hp_.n_head_kv) + size_t(kv_head)) * 2 + 1];
  }
  void attention(const ForwardBatch& b);
  void attention_fast(const ForwardBatch& b);  // model/attention_fast.cpp
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
  std::vector<float> out_;   // (n_batch, n_embd) normed rows whose logits are wanted
  // Attention inputs of the current layer.
  std::vector<int32_t> seq_len_;          // (n_seqs) positions each sequence attends to
  std::vector<std::vector<float>> wide_;  // (n_seqs) F16 store: K then V rows widened to f32
  std::vector<const float*> row_ptrs_;    // (n_seqs, n_head_kv, 2, blocks) KvRows::blocks
  std::vector<KvRows> seq_rows_;          // (n_seqs, n_head_kv, 2) K and V rows
  ForwardBatch single_;                   // eval()'s batch
  std::unique_ptr<DeviceLayers> dev_;     // the offloaded layers, or null
};

}  // namespace tzero
