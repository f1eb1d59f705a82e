// Multi-head latent attention (deepseek2: DeepSeek-V2/V3/R1, Kimi-K2), in llama.cpp's absorbed
// form, the one form tzero runs for prefill, decode and every batch (docs/DETERMINISM.md, MLA).
//
// For the normed input x of each token (C = kv_lora_rank, R = n_rot, DK = key_length_mla,
// NOPE = DK - R, DV = value_length_mla, H heads; names as traced):
//   q        = Wq_b rmsnorm(Wq_a x) (or Wq x)                (H, DK): per head [nope | rope]
//   kv_cmpr, k_pe = Wkv_a x split                            (C), (R)
//   kv_cmpr  = rmsnorm(kv_cmpr) * kv_a_norm;  q_pe, k_pe roped (interleaved pairs, YaRN)
//   q_abs[h] = Wk_b[h] q_nope[h]                             (H, C): the query in latent space
//   Qcur[h]  = [q_abs[h] | q_pe[h]],  Kcur = [kv_cmpr | k_pe]   (H, C + R), (C + R)
//   the cache keeps Kcur only (one row of C + R per token); the value is its first C floats
//   kqv_lat[h] = attention of Qcur[h] over the cached rows (one kv head, scale mla_kq_scale)
//   kqv_out[h] = Wv_b[h] kqv_lat[h]                           (H, DV)
//   attn_out = Wo kqv_out
// The per-head products are grouped matmuls (matmul_experts with head h as expert h), so each
// head's rows are dot-v1 of their own, whatever the batch.
#pragma once

#include "model/arch/architecture.h"

namespace tzero {

class MlaAttention {
 public:
  MlaAttention(const HParams& hp, ActLayout& layout);

  // out = the attention block of layer il (weights L) applied to x (both (n_tok, n_embd)).
  void run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const;

 private:
  const HParams& hp_;
  Act q_a_, q_, q_nope_, q_pe_, kv_, c_, k_pe_, q_abs_, q_full_, k_full_, head_ids_, lat_, att_;
};

}  // namespace tzero
