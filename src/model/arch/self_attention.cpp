#include "model/arch/self_attention.h"

namespace tzero {

SelfAttention::SelfAttention(const HParams& hp, ActLayout& layout) : hp_(hp) {
  const size_t Q = size_t(hp.q_dim()), KV = size_t(hp.kv_dim());
  q_ = layout.add(Q);    // (n_tok, q_dim)
  k_ = layout.add(KV);   // (n_tok, kv_dim)
  v_ = layout.add(KV);   // (n_tok, kv_dim)
  att_ = layout.add(Q);  // (n_tok, q_dim) attention output per head
  rope_ = hp.rope_neox ? RopeLayout::Neox : RopeLayout::Interleaved;
  gated_ = hp.hybrid() && hp.layer_kinds.empty();  // the Gated DeltaNet hybrids
  if (gated_) {
    q_full_ = layout.add(2 * Q);  // (n_tok, 2 * q_dim) per head: query, then gate
    gate_ = layout.add(Q);        // (n_tok, q_dim)
  }
}

void SelfAttention::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  if (gated_) {
    const size_t D = size_t(hp_.head_dim), H = size_t(hp_.n_head);
    o.matmul(L.wq, x, q_full_, n);
    p.trace("Qcur_full", il, q_full_, n);
    o.copy_cols(q_full_, 2 * D, 0, q_, D, 0, D, H, n);
    o.copy_cols(q_full_, 2 * D, D, gate_, D, 0, D, H, n);
  } else {
    o.matmul(L.wq, x, q_, n);
  }
  o.matmul(L.wk, x, k_, n);
  o.matmul(L.wv, x, v_, n);
  if (L.bq) o.add_bias(q_, L.bq, n);
  if (L.bk) o.add_bias(k_, L.bk, n);
  if (L.bv) o.add_bias(v_, L.bv, n);
  if (L.q_norm) {
    o.rmsnorm_heads(q_, L.q_norm, hp_.rms_eps, size_t(hp_.head_dim), n);
    o.rmsnorm_heads(k_, L.k_norm, hp_.rms_eps, size_t(hp_.head_dim), n);
  }
  const bool swa = hp_.is_swa(il);
  const RopeFreqs freqs = swa ? RopeFreqs::SlidingWindow : RopeFreqs::Model;
  if (!hp_.rope_none) {  // nemotron_h: no rotary embedding
    o.rope(q_, hp_.n_head, hp_.head_dim, rope_, freqs);
    o.rope(k_, hp_.n_head_kv, hp_.head_dim, rope_, freqs);
  }
  o.kv_write(il, k_, v_);
  p.trace("Qcur", il, q_, n);
  p.trace("Kcur", il, k_, n);
  p.trace("Vcur", il, v_, n);
  AttentionSpec spec;
  spec.n_head = hp_.n_head;
  spec.n_head_kv = hp_.n_head_kv;
  spec.head_dim = hp_.head_dim;
  spec.scale = hp_.attn_scale;
  spec.window = swa ? hp_.n_swa : 0;
  spec.softcap = hp_.attn_softcap;
  spec.sinks = L.sinks;
  o.attention(il, q_, att_, spec);
  p.trace("kqv_out", il, att_, n);
  if (gated_) {
    o.mul_sigmoid(att_, gate_, n);
    p.trace("attn_gated", il, att_, n);
  }
  o.matmul(L.wo, att_, out, n);
  if (L.bo) o.add_bias(out, L.bo, n);
  p.trace("attn_out", il, out, n);
}

}  // namespace tzero
