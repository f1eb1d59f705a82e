// The linear attention of the Gated DeltaNet hybrids (qwen3next, qwen35, qwen35moe): a short
// causal convolution and the delta-rule recurrence over each sequence's recurrent state
// (kernels/delta_net.h, delta-v1; the state lives in the KV store beside the paged cache).
//
// For the normed input x of each token (Hk key heads and Hv value heads of width D, K the
// convolution's width, C = 2 Hk D + Hv D; names as traced):
//   linear_attn_qkv_mixed = Wqkv x  [q | k | v]  (C)       z = Wz x  (Hv D)
//     (qwen3next's older ssm_in: one matmul, split per key head)
//   beta = sigmoid(Wbeta x)     gate = softplus(Walpha x + dt_bias) * A     (Hv each)
//     (qwen3next's ssm_ba: one matmul, split per key head)
//   conv_output_silu = silu(short_conv(linear_attn_qkv_mixed)), with the last K - 1 inputs
//   qk_l2norm = its q and k heads L2-normed (eps: the RMS epsilon), v as it was
//   attn_output = delta rule of (q, k, v, gate, beta) over the state, times 1/sqrt(D)
//   final_output = rmsnorm per head (ssm_norm) * silu(z)     linear_attn_out = Wout final_output
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

class DeltaNetLayer {
 public:
  // Declares its buffers in `layout`.
  DeltaNetLayer(const HParams& hp, ActLayout& layout);

  // out = the linear-attention block of layer il (weights L) applied to x (both
  // (n_tok, n_embd)); advances the batch's sequences' states of layer il.
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  const HParams& hp_;
  DeltaNetSpec spec_;
  Act mixed_;         // (n_tok, C + Hv D) qwen3next's ssm_in output, per key head
  Act qkv_, z_;       // (n_tok, C), (n_tok, Hv D)
  Act ba_;            // (n_tok, 2 Hv) qwen3next's ssm_ba output, per key head [b | a]
  Act beta_, alpha_;  // (n_tok, Hv) each; alpha becomes the log decay
  Act conv_, o_;      // (n_tok, C), (n_tok, Hv D)
};

}  // namespace tzero
