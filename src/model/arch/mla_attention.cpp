#include "model/arch/mla_attention.h"

#include <vector>

namespace tzero {

MlaAttention::MlaAttention(const HParams& hp, ActLayout& layout) : hp_(hp) {
  const size_t H = size_t(hp.n_head), C = size_t(hp.kv_lora_rank), R = size_t(hp.n_rot),
               DK = size_t(hp.head_dim_k_mla), DV = size_t(hp.head_dim_v_mla), NOPE = DK - R;
  if (hp.q_lora_rank > 0) q_a_ = layout.add(size_t(hp.q_lora_rank));  // (n_tok, q_lora_rank)
  q_ = layout.add(H * DK);            // (n_tok, H, DK) per head [nope | rope]
  q_nope_ = layout.add(H * NOPE);     // (n_tok, H, NOPE)
  q_pe_ = layout.add(H * R);          // (n_tok, H, R)
  kv_ = layout.add(C + R);            // (n_tok, C + R) latent, then the rope key
  c_ = layout.add(C);                 // (n_tok, C) the normed latent
  k_pe_ = layout.add(R);              // (n_tok, R)
  q_abs_ = layout.add(H * C);         // (n_tok, H, C) queries in latent space
  q_full_ = layout.add(H * (C + R));  // (n_tok, H, C + R)
  k_full_ = layout.add(C + R);        // (n_tok, C + R) the cached row
  head_ids_ = layout.add(H);          // (n_tok, H) 0 .. H-1 as floats: head h is "expert" h
  lat_ = layout.add(H * C);           // (n_tok, H, C) attention output in latent space
  att_ = layout.add(H * DV);          // (n_tok, H, DV)
}

void MlaAttention::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  const size_t H = size_t(hp_.n_head), C = size_t(hp_.kv_lora_rank), R = size_t(hp_.n_rot),
               DK = size_t(hp_.head_dim_k_mla), NOPE = DK - R;
  if (L.wq_a.data) {
    o.matmul(L.wq_a, x, q_a_, n);
    o.rmsnorm(q_a_, L.q_a_norm, hp_.rms_eps, q_a_, n);
    o.matmul(L.wq_b, q_a_, q_, n);
  } else {
    o.matmul(L.wq, x, q_, n);
  }
  p.trace("q", il, q_, n);
  o.matmul(L.wkv_a, x, kv_, n);
  o.copy_cols(kv_, 0, 0, c_, 0, 0, C, 1, n);
  o.copy_cols(kv_, 0, C, k_pe_, 0, 0, R, 1, n);
  o.rmsnorm(c_, L.kv_a_norm, hp_.rms_eps, c_, n);
  p.trace("kv_cmpr", il, c_, n);
  o.copy_cols(q_, DK, 0, q_nope_, NOPE, 0, NOPE, H, n);
  o.copy_cols(q_, DK, NOPE, q_pe_, R, 0, R, H, n);
  o.rope(q_pe_, int(H), int(R), RopeLayout::Interleaved, RopeFreqs::Model);
  o.rope(k_pe_, 1, int(R), RopeLayout::Interleaved, RopeFreqs::Model);
  p.trace("q_pe", il, q_pe_, n);
  p.trace("k_pe", il, k_pe_, n);
  // Head h is "expert" h of the per-head matrices.
  std::vector<float> ids(n * H);
  for (size_t t = 0; t < n; ++t)
    for (size_t h = 0; h < H; ++h) ids[t * H + h] = float(h);
  o.upload(head_ids_, ids.data(), n);
  o.matmul_experts(L.wk_b, q_nope_, true, head_ids_, q_abs_, n);
  p.trace("q_nope_absorbed", il, q_abs_, n);
  o.copy_cols(q_abs_, C, 0, q_full_, C + R, 0, C, H, n);
  o.copy_cols(q_pe_, R, 0, q_full_, C + R, C, R, H, n);
  o.copy_cols(c_, 0, 0, k_full_, 0, 0, C, 1, n);
  o.copy_cols(k_pe_, 0, 0, k_full_, 0, C, R, 1, n);
  o.kv_write(il, k_full_, k_full_);  // key-only store: the value is the key's first C floats
  p.trace("Qcur", il, q_full_, n);
  p.trace("Kcur", il, k_full_, n);
  AttentionSpec spec;
  spec.n_head = int(H);
  spec.n_head_kv = 1;
  spec.head_dim = int(C + R);
  spec.v_dim = int(C);
  spec.scale = hp_.mla_kq_scale;
  o.attention(il, q_full_, lat_, spec);
  p.trace("kqv_lat", il, lat_, n);
  o.matmul_experts(L.wv_b, lat_, true, head_ids_, att_, n);
  p.trace("kqv_out", il, att_, n);
  o.matmul(L.wo, att_, out, n);
  p.trace("attn_out", il, out, n);
}

}  // namespace tzero
