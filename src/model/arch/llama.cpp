// The llama family: llama (and Mistral, TinyLlama: grouped-query attention), qwen2 (Q/K/V
// biases, neox RoPE), qwen3 (per-head Q/K RMSNorm, head_dim != n_embd / n_head), and their
// mixture-of-experts kin: llama with experts (Mixtral), qwen2moe (qwen2 attention, a shared
// expert), qwen3moe (qwen3 attention), whose feed-forward is model/arch/moe_ffn.h. They differ
// by optional tensors, the RoPE layout and the feed-forward block, not by copies of the loop.
//
// Per layer (names as traced):
//   attn_norm = rmsnorm(x)                                 Qcur/Kcur/Vcur = W{q,k,v} attn_norm
//   (+ bias) (+ per-head rmsnorm of q and k) (+ rope of q and k), K and V into the cache
//   kqv_out = attention(Qcur)                              attn_out = Wo kqv_out
//   ffn_inp = x + attn_out                                 ffn_norm = rmsnorm(ffn_inp)
//   ffn_gate, ffn_up = W{gate,up} ffn_norm                 ffn_swiglu = silu(gate) * up
//   ffn_out = Wdown ffn_swiglu                             l_out = ffn_inp + ffn_out
//   (with experts, ffn_gate .. ffn_out are the MoE block's: ffn_moe_* .. ffn_moe_out)
// then result_norm = rmsnorm(x of the logits rows), result_output = Woutput result_norm.
#include <cmath>
#include <optional>

#include "model/arch/architecture.h"
#include "model/arch/moe_ffn.h"

namespace tzero {

namespace {

class LlamaFamily final : public Architecture {
 public:
  explicit LlamaFamily(const Model& model) : model_(model), hp_(model.hparams()) {
    const size_t E = size_t(hp_.n_embd), Q = size_t(hp_.q_dim()), KV = size_t(hp_.kv_dim()),
                 F = size_t(hp_.n_ff);
    x_ = residual_ = layout_.add(E);  // (n_tok, n_embd) residual stream
    xb_ = layout_.add(E);             // (n_tok, n_embd) normed input of a block
    q_ = layout_.add(Q);              // (n_tok, q_dim)
    k_ = layout_.add(KV);             // (n_tok, kv_dim)
    v_ = layout_.add(KV);             // (n_tok, kv_dim)
    att_ = layout_.add(Q);            // (n_tok, q_dim) attention output per head
    proj_ = layout_.add(E);           // (n_tok, n_embd) attention or ffn projection
    if (hp_.moe()) {
      moe_.emplace(hp_, layout_);
    } else {
      gate_ = layout_.add(F);  // (n_tok, n_ff)
      up_ = layout_.add(F);    // (n_tok, n_ff)
    }
    rows_ = layout_.add(E);                      // (n_out, n_embd) residual rows of the logits rows
    out_ = layout_.add(E);                       // (n_out, n_embd) their final norm
    logits_ = layout_.add(size_t(hp_.n_vocab));  // (n_out, n_vocab)
    attn_.n_head = hp_.n_head;
    attn_.n_head_kv = hp_.n_head_kv;
    attn_.head_dim = hp_.head_dim;
    attn_.scale = 1.0f / std::sqrt(float(hp_.head_dim));
    rope_ = hp_.rope_neox ? RopeLayout::Neox : RopeLayout::Interleaved;
  }

  void embed(const Pass& p) const override {
    p.ops->embed(model_.tok_embd(), x_);
    p.trace("inp_embd", -1, x_, p.n_tok);
  }

  void layer(const Pass& p, int il) const override {
    BackendOps& o = *p.ops;
    const LayerWeights& L = model_.layers()[size_t(il)];
    const size_t n = p.n_tok;
    const float eps = hp_.rms_eps;

    // Attention block.
    o.rmsnorm(x_, L.attn_norm, eps, xb_, n);
    p.trace("attn_norm", il, xb_, n);
    o.matmul(L.wq, xb_, q_, n);
    o.matmul(L.wk, xb_, k_, n);
    o.matmul(L.wv, xb_, v_, n);
    if (L.bq) o.add_bias(q_, L.bq, n);
    if (L.bk) o.add_bias(k_, L.bk, n);
    if (L.bv) o.add_bias(v_, L.bv, n);
    if (L.q_norm) {
      o.rmsnorm_heads(q_, L.q_norm, eps, size_t(hp_.head_dim), n);
      o.rmsnorm_heads(k_, L.k_norm, eps, size_t(hp_.head_dim), n);
    }
    o.rope(q_, hp_.n_head, hp_.head_dim, rope_);
    o.rope(k_, hp_.n_head_kv, hp_.head_dim, rope_);
    o.kv_write(il, k_, v_);
    p.trace("Qcur", il, q_, n);
    p.trace("Kcur", il, k_, n);
    p.trace("Vcur", il, v_, n);
    o.attention(il, q_, att_, attn_);
    p.trace("kqv_out", il, att_, n);
    o.matmul(L.wo, att_, proj_, n);
    p.trace("attn_out", il, proj_, n);
    o.add(x_, proj_, n);
    p.trace("ffn_inp", il, x_, n);

    // Feed-forward block (SwiGLU, or the experts').
    o.rmsnorm(x_, L.ffn_norm, eps, xb_, n);
    p.trace("ffn_norm", il, xb_, n);
    if (moe_) {
      moe_->run(p, il, L, xb_, proj_);
      o.add(x_, proj_, n);
      p.trace("l_out", il, x_, n);
      return;
    }
    o.matmul(L.w_gate, xb_, gate_, n);
    o.matmul(L.w_up, xb_, up_, n);
    p.trace("ffn_gate", il, gate_, n);
    p.trace("ffn_up", il, up_, n);
    o.glu(Activation::SiLU, gate_, up_, gate_, n);
    p.trace("ffn_swiglu", il, gate_, n);
    o.matmul(L.w_down, gate_, proj_, n);
    p.trace("ffn_out", il, proj_, n);
    o.add(x_, proj_, n);
    p.trace("l_out", il, x_, n);
  }

  void output(const Pass& p) const override {
    BackendOps& o = *p.ops;
    o.gather_logits_rows(x_, rows_);
    o.rmsnorm(rows_, model_.output_norm(), hp_.rms_eps, out_, p.n_out);
    p.trace("result_norm", -1, out_, p.n_out);
    o.matmul(model_.output(), out_, logits_, p.n_out);
    p.trace("result_output", -1, logits_, p.n_out);
  }

 private:
  const Model& model_;
  const HParams& hp_;
  Act x_, xb_, q_, k_, v_, att_, proj_, gate_, up_, rows_, out_;
  std::optional<MoeFeedForward> moe_;
  AttentionSpec attn_;
  RopeLayout rope_;
};

}  // namespace

std::unique_ptr<Architecture> make_llama_family(const Model& model) {
  return std::make_unique<LlamaFamily>(model);
}

}  // namespace tzero
