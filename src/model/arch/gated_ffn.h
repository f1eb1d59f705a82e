// The dense gated feed-forward block, written once: SwiGLU (llama, qwen) or GeGLU (gemma3).
//
// For the normed input x of each token (names as traced, llama.cpp's):
//   ffn_gate, ffn_up = W{gate,up} x       ffn_swiglu (SiLU) or ffn_geglu (GELU-tanh) = act(gate) *
//   up ffn_out = Wdown of it
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

class GatedFeedForward {
 public:
  // Declares its buffers in `layout`: n_ff wide.
  GatedFeedForward(const HParams& hp, Activation act, ActLayout& layout);

  // out = the block of layer il (weights L) applied to x (both (n_tok, n_embd); out != x).
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  Activation act_;
  Act gate_, up_;
};

}  // namespace tzero
