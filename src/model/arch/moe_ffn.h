// The mixture-of-experts feed-forward block, written once for every architecture with experts
// (qwen3moe, qwen2moe, llama with experts as Mixtral), over the ops of model/backend_ops.h.
//
// For the normed input x of each token (names as traced, llama.cpp's):
//   ffn_moe_logits = Wrouter x                       (n_expert)
//   ffn_moe_probs, ffn_moe_topk, ffn_moe_weights     softmax, the k largest (ties to the lower
//                                                    id), their weights (renormalised: moe-v1)
//   ffn_moe_gate, ffn_moe_up = Wgate[e] x, Wup[e] x  per slot (token, rank j), e = topk_j
//   ffn_moe_swiglu = silu(gate) * up                 ffn_moe_down = Wdown[e] swiglu, per slot
//   ffn_moe_out = sum_j weights_j * down_j           in rank order: the expert combine
// gpt-oss adds biases (router, each expert's gate, up and down: the gate and up biases before the
// activation, the down bias before the combine), routes by the k largest logits with a softmax
// over them (MoeGating::SoftmaxWeight), and activates with its clamped SwiGLU (SwigluOai).
// glm4moe (and deepseek2) route by sigmoid scores with the layer's exp_probs_b bias for the
// choice only, within the best groups (MoeGating::Sigmoid), and add ungated shared experts:
// ffn_out = ffn_moe_out + ffn_shexp.
// qwen2moe adds its shared expert: ffn_shexp = dense SwiGLU of x, ffn_shexp_gate_inp = w . x,
// ffn_shexp_out = sigmoid(gate_inp) * ffn_shexp, ffn_out = ffn_moe_out + ffn_shexp_out.
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

// Experts that live on other ranks (expert parallelism, docs/DISTRIBUTED.md): a MoE layer's
// slots whose experts are elsewhere are computed there, one slot per row (ExpertSlots), and
// their down rows come back before the combine, which stays here in rank order (moe-v1). Each
// slot's row is its own dot products whatever else the call computes (kernels/matmul_experts.h),
// so where a slot runs changes no bit.
class RemoteExperts {
 public:
  virtual ~RemoteExperts() = default;
  // Starts layer il's slots whose experts live elsewhere: x (n_tok, n_embd) the normed input,
  // ids (n_tok, k) the chosen experts (as floats). Marks those slots -1 in ids, so that this
  // rank's products leave them out (backend_ops.h, matmul_experts).
  virtual void send(int il, const float* x, float* ids, size_t n_tok, size_t k) = 0;
  // Waits for them: each one's down row (after its down bias) into down (n_tok, k * n_embd),
  // and their ids back. Throws tzero::Error when a rank failed them or does not answer in time.
  virtual void receive(int il, float* ids, float* down, size_t n_tok, size_t k) = 0;
};

// The expert part of MoeFeedForward for slots one per row, on the rank that holds their experts:
// down row s = the slot's expert (gate, up, biases, activation, down, down bias) of x row s.
class ExpertSlots {
 public:
  // Declares its buffers in `layout`.
  ExpertSlots(const HParams& hp, ActLayout& layout);
  Act x() const { return x_; }        // (n, n_embd) in: each slot's input row
  Act ids() const { return ids_; }    // (n, 1) in: each slot's expert (as a float)
  Act down() const { return down_; }  // (n, n_embd) out
  void run(BackendOps& o, const LayerWeights& L, size_t n) const;

 private:
  Activation act_;
  Act x_, ids_, gate_, up_, down_;
};

class MoeFeedForward {
 public:
  // Declares its buffers in `layout`.
  MoeFeedForward(const HParams& hp, ActLayout& layout);

  // out = the block of layer il (weights L) applied to x (both (n_tok, n_embd); out != x).
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  MoeSpec spec_;
  bool shared_;
  Activation act_;
  Act logits_, probs_, ids_, weights_, gate_, up_, down_;
  Act sh_gate_, sh_up_, sh_out_, sh_logit_;
};

}  // namespace tzero
