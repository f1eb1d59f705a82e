// The self-attention block every architecture here shares, written once over the ops of
// model/backend_ops.h: projections, optional biases and per-head Q/K norms, RoPE, the KV cache
// write, attention (full or sliding-window, per layer) and the output projection.
//
// For the normed input x of each token (names as traced, llama.cpp's):
//   Qcur, Kcur, Vcur = W{q,k,v} x (+ b{q,k,v}) (+ per-head rmsnorm of q and k) (+ rope of q, k)
//   K and V into the cache of the layer
//   kqv_out = attention(Qcur) over the layer's positions    attn_out = Wo kqv_out
// Which tensors exist decides the options (qwen2's biases, qwen3's and gemma3's Q/K norms);
// hparams decide the rope layout, the scale, and which layers have a window and their rope.
// The Gated DeltaNet hybrids' attention (qwen3next, qwen35) gates its output: Wq gives each
// query head followed by its gate head (Qcur_full), split into Qcur and gate, and
// attn_gated = kqv_out * sigmoid(gate) goes to Wo.
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

class SelfAttention {
 public:
  // Declares its buffers in `layout`.
  SelfAttention(const HParams& hp, ActLayout& layout);

  // out = the attention block of layer il (weights L) applied to x (both (n_tok, n_embd)).
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  const HParams& hp_;
  Act q_, k_, v_, att_;
  bool gated_ = false;
  Act q_full_, gate_;  // gated: (n_tok, 2 * q_dim) query and gate heads, (n_tok, q_dim) gates
  RopeLayout rope_;
};

}  // namespace tzero
