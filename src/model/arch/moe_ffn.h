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
