// The llama family: llama (and Mistral, TinyLlama: grouped-query attention), qwen2 (Q/K/V
// biases, neox RoPE), qwen3 (per-head Q/K RMSNorm, head_dim != n_embd / n_head), and their
// mixture-of-experts kin: llama with experts (Mixtral), qwen2moe (qwen2 attention, a shared
// expert), qwen3moe (qwen3 attention), whose feed-forward is model/arch/moe_ffn.h; and phi3
// (Phi-3, Phi-3.5, Phi-4: its fused attn_qkv and gate/up tensors are loaded as row views of
// one matrix, its partial rotary and LongRoPE factors are the rope table's); and gpt-oss
// (attention sinks and output bias, sliding windows on even layers, a MoE block with biases and
// its clamped SwiGLU; its ffn_norm is the file's post_attention_norm); and glm4moe (biases,
// optional Q/K norms, partial neox rotary, leading dense layers, sigmoid-routed experts with
// ungated shared ones); and deepseek2 (multi-head latent attention, mla_attention.h, with
// glm4moe's routing, groups and leading dense layers); and the Gated DeltaNet hybrids qwen3next,
// qwen35 and qwen35moe, whose layers attend (gated, partial neox rotary) every
// full_attention_interval-th layer and are linear attention (delta_net_layer.h) otherwise, their
// ffn_norm the file's post_attention_norm. They differ by optional tensors, the RoPE layout, the
// mixer and the feed-forward block, not by copies of the loop.
//
// Per layer (names as traced):
//   attn_norm = rmsnorm(x)        Qcur .. attn_out = the attention block (self_attention.h), or
//                                 linear_attn_qkv_mixed .. linear_attn_out (delta_net_layer.h)
//   ffn_inp = x + attn_out        ffn_norm = rmsnorm(ffn_inp)
//   ffn_gate .. ffn_out = the SwiGLU block (gated_ffn.h), or with experts the MoE block's
//   ffn_moe_* .. ffn_moe_out (moe_ffn.h)
//   l_out = ffn_inp + ffn_out
// then result_norm = rmsnorm(x of the logits rows), result_output = Woutput result_norm.
#include <optional>

#include "model/arch/architecture.h"
#include "model/arch/delta_net_layer.h"
#include "model/arch/gated_ffn.h"
#include "model/arch/mla_attention.h"
#include "model/arch/moe_ffn.h"
#include "model/arch/self_attention.h"

namespace tzero {

namespace {

class LlamaFamily final : public Architecture {
 public:
  explicit LlamaFamily(const Model& model) : model_(model), hp_(model.hparams()) {
    const size_t E = size_t(hp_.n_embd);
    x_ = residual_ = layout_.add(E);  // (n_tok, n_embd) residual stream
    xb_ = layout_.add(E);             // (n_tok, n_embd) normed input of a block
    proj_ = layout_.add(E);           // (n_tok, n_embd) attention or ffn output
    if (hp_.mla())
      mla_.emplace(hp_, layout_);
    else
      attn_.emplace(hp_, layout_);
    if (hp_.recurrent()) delta_.emplace(hp_, layout_);
    if (hp_.moe()) moe_.emplace(hp_, layout_);
    if (!hp_.moe() || hp_.n_layer_dense_lead > 0) ffn_.emplace(hp_, Activation::SiLU, layout_);
    rows_ = layout_.add(E);                      // (n_out, n_embd) residual rows of the logits rows
    normed_ = out_ = layout_.add(E);             // (n_out, n_embd) their final norm
    logits_ = layout_.add(size_t(hp_.n_vocab));  // (n_logits, n_vocab)
  }

  void embed(const Pass& p) const override {
    p.ops->embed(model_.tok_embd(), x_);
    p.trace("inp_embd", -1, x_, p.n_tok);
  }

  void layer(const Pass& p, int il) const override {
    BackendOps& o = *p.ops;
    const LayerWeights& L = model_.layers()[size_t(il)];
    const size_t n = p.n_tok;
    o.rmsnorm(x_, L.attn_norm, hp_.rms_eps, xb_, n);
    p.trace("attn_norm", il, xb_, n);
    if (mla_)
      mla_->run(p, il, L, xb_, proj_);
    else if (hp_.recurrent_layer(il))
      delta_->run(p, il, L, xb_, proj_);
    else
      attn_->run(p, il, L, xb_, proj_);
    o.add(x_, proj_, n);
    p.trace("ffn_inp", il, x_, n);
    o.rmsnorm(x_, L.ffn_norm, hp_.rms_eps, xb_, n);
    p.trace("ffn_norm", il, xb_, n);
    if (hp_.moe_layer(il))
      moe_->run(p, il, L, xb_, proj_);
    else
      ffn_->run(p, il, L, xb_, proj_);
    o.add(x_, proj_, n);
    p.trace("l_out", il, x_, n);
  }

  void output(const Pass& p) const override { norm_and_logits(p, model_, rows_, out_); }

 private:
  const Model& model_;
  const HParams& hp_;
  Act x_, xb_, proj_, rows_, out_;
  std::optional<SelfAttention> attn_;
  std::optional<MlaAttention> mla_;
  std::optional<DeltaNetLayer> delta_;
  std::optional<GatedFeedForward> ffn_;
  std::optional<MoeFeedForward> moe_;
};

}  // namespace

std::unique_ptr<Architecture> make_llama_family(const Model& model) {
  return std::make_unique<LlamaFamily>(model);
}

}  // namespace tzero
