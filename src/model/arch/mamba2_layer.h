// The Mamba-2 mixer of nemotron_h's recurrent layers: a short causal convolution with a bias and
// the selective scan over each sequence's recurrent state (kernels/ssm_scan.h, mamba2-v1; the
// state lives in the KV store beside the paged cache, as the Gated DeltaNet's).
//
// For the normed input x of each token (H heads of P, G groups of N, I = H P, C = I + 2 G N;
// names as traced):
//   zxBCdt = Win x  [z (I) | xBC (C) | dt (H)]
//   conv_output_silu = silu(short_conv(xBC) + conv_bias), with the sequence's last K - 1 inputs
//   y_ssm = scan(x, B, C, dt) + x * D    (dt = softplus(dt + dt_bias), per head)
//   y_gated = y_ssm * silu(z)            y_norm = rmsnorm per group of I / G (ssm_norm)
//   ssm_out = Wout y_norm
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

class Mamba2Layer {
 public:
  // Declares its buffers in `layout`.
  Mamba2Layer(const HParams& hp, ActLayout& layout);

  // out = the Mamba-2 block of layer il (weights L) applied to x (both (n_tok, n_embd));
  // advances the batch's sequences' states of layer il.
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  const HParams& hp_;
  SsmSpec spec_;
  Act zxbcdt_;        // (n_tok, I + C + H)
  Act z_, xbc_, dt_;  // (n_tok, I), (n_tok, C), (n_tok, H)
  Act conv_, y_;      // (n_tok, C), (n_tok, I)
};

}  // namespace tzero
