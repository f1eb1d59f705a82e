// The CPU backend: the ops of model/backend_ops.h on host memory with a KernelSet (the scalar
// reference or a SIMD variant, same bits) and a thread pool (each output element computed by
// one thread, in its canonical order, so the thread count never changes bits).
//
// `fast` (--mode fast) gives up the contract to show what it costs: matmul rows scheduled
// dynamically, attention split over the key range with partial results merged in arrival
// order (cpu_attention.cpp), and a token's expert outputs added into its row in arrival order
// with atomic adds (kernels/moe.h).
#pragma once

#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/matmul_experts.h"
#include "kernels/ops.h"
#include "model/backend_ops.h"
#include "model/hparams.h"

namespace tzero {

class CpuBackend final : public BackendOps {
 public:
  // n_ctx: positions the rope table covers; rope_factors: the model's frequency factors for
  // that context (Model::rope_factors), or null. The pool must outlive the backend.
  CpuBackend(const HParams& hp, const ActLayout& layout, ThreadPool& pool, const KernelSet& kernels,
             bool fast, int n_ctx, const float* rope_factors = nullptr);

  std::string describe() const override { return "cpu (" + std::string(kern_.name) + ")"; }
  void begin(const ForwardBatch& batch, KvStore& kv) override;
  void upload(Act dst, const float* host, size_t rows) override;
  void download(Act src, size_t rows, float* host) override;
  float* host_rows(Act a) override { return bufs_[size_t(a.id)].data(); }

  void embed(const Matrix& table, Act out) override;
  void rmsnorm(Act x, const float* w, float eps, Act out, size_t rows) override;
  void rmsnorm_heads(Act x, const float* w, float eps, size_t head_dim, size_t rows) override;
  void matmul(const Matrix& w, Act x, Act y, size_t rows) override;
  void add_bias(Act y, const float* b, size_t rows) override;
  void rope(Act x, int n_heads, int head_dim, RopeLayout layout, RopeFreqs freqs) override;
  void kv_write(int layer, Act k, Act v) override;
  void attention(int layer, Act q, Act out, const AttentionSpec& spec) override;
  void add(Act x, Act y, size_t rows) override;
  void scale(Act x, float s, size_t rows) override;
  void softcap(Act x, float cap, size_t rows) override;
  void glu(Activation act, Act gate, Act up, Act out, size_t rows) override;
  void moe_route(Act logits, const MoeSpec& spec, Act probs, Act ids, Act weights,
                 size_t rows) override;
  void matmul_experts(const ExpertMatrix& w, Act x, bool x_per_slot, Act ids, Act y,
                      size_t rows) override;
  void add_expert_bias(Act y, const float* b, Act ids, size_t rows) override;
  void copy_cols(Act src, size_t src_stride, size_t src_off, Act dst, size_t dst_stride,
                 size_t dst_off, size_t width, size_t groups, size_t rows) override;
  void moe_combine(Act y, Act weights, Act out, size_t rows) override;
  void scale_by_sigmoid(Act x, Act g, size_t rows) override;
  void mul_sigmoid(Act x, Act g, size_t rows) override;
  // cpu_delta_net.cpp: the Gated DeltaNet ops, parallel over sequences, heads (channels) and
  // rows of the state, each sequence's tokens in order.
  void short_conv(int layer, Act x, const float* w, int K, Act out,
                  const float* bias = nullptr) override;
  void ssm_scan(int layer, Act xbc, Act dt, const float* dt_bias, const float* A, const float* D,
                Act y, const SsmSpec& spec) override;
  void rmsnorm_groups(Act x, const float* w, float eps, size_t group, size_t rows) override;
  void relu_sqr(Act x, size_t rows) override;
  void l2norm_heads(Act x, size_t width, size_t head_dim, float eps, size_t rows) override;
  void delta_gates(Act a, Act b, const float* dt_bias, const float* A, size_t rows) override;
  void delta_net(int layer, Act qkv, Act g, Act beta, Act out, const DeltaNetSpec& spec) override;
  void gather_logits_rows(Act x, Act out) override;

 private:
  float* in(Act a) { return bufs_[size_t(a.id)].data(); }
  // The buffer, grown to hold `rows` rows: each buffer takes the rows its use needs (the
  // (n_out, n_vocab) logits never take n_batch rows).
  float* out(Act a, size_t rows) {
    std::vector<float>& b = bufs_[size_t(a.id)];
    if (b.size() < rows * a.len) b.resize(rows * a.len);
    return b.data();
  }

  // cpu_attention.cpp: the key and value rows of each (sequence, kv head) of the batch for one
  // layer, then attention in the canonical order or fast mode's split.
  void gather_kv_rows(int layer, size_t n_head_kv, size_t head_dim);
  const KvRows& k_rows(int seq, int kv_head) const {
    return seq_rows_[(size_t(seq) * n_kvh_ + size_t(kv_head)) * 2];
  }
  const KvRows& v_rows(int seq, int kv_head) const {
    return seq_rows_[(size_t(seq) * n_kvh_ + size_t(kv_head)) * 2 + 1];
  }
  void attention_canonical(const float* q, float* att, const AttentionSpec& s);
  // The batch's tokens of each sequence, in order (for the recurrent ops), and whether a
  // sequence starts at position 0 (its state is zeroed) else continues its state (checked).
  void group_sequences();
  void check_state(int layer, size_t seq, bool zero_conv, bool zero_delta);
  // After a layer's recurrence: each sequence's state (and each snapshot) is at the position
  // after its last token of the pass.
  void advance_states(int layer);
  void attention_fast(const float* q, float* att, const AttentionSpec& s);

  ThreadPool& pool_;
  const KernelSet kern_;  // a copy: function pointers and a name
  bool fast_;
  std::vector<float> sel_;  // moe_route's selection scores (sigmoid gating)
  RopeYarn yarn_;           // the model's YaRN settings (used only when its scaling is yarn)
  RopeTable rope_;          // the model's frequencies
  RopeTable rope_swa_;      // the sliding-window layers' (n_rot 0 when the model has none)
  MatmulScratch mm_;
  ExpertScratch experts_;
  std::vector<int32_t> expert_ids_;       // (rows, k) the ids of an ids buffer as integers
  std::vector<std::vector<float>> bufs_;  // one per Act of the layout
  // The pass.
  const ForwardBatch* batch_ = nullptr;
  KvStore* kv_ = nullptr;
  // Attention inputs of the current layer.
  size_t n_kvh_ = 0;
  std::vector<int32_t> seq_len_;          // (n_seqs) positions each sequence attends to
  std::vector<std::vector<float>> wide_;  // (n_seqs) F16 store: K then V rows widened to f32
  std::vector<const float*> row_ptrs_;    // (n_seqs, n_head_kv, 2, blocks) KvRows::blocks
  std::vector<KvRows> seq_rows_;          // (n_seqs, n_head_kv, 2) K and V rows
  std::vector<std::vector<int32_t>> seq_tokens_;  // (n_seqs) token indices, in position order
  std::vector<int32_t> save_at_;  // (n_tok) snapshot slot to copy the state into after it, or -1
  // Attention split over position blocks (cpu_attention.cpp), per unit = (item, block).
  std::vector<float> split_s_, split_m_, split_z_, split_o_;
};

}  // namespace tzero
