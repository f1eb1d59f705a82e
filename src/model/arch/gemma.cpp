// gemma3 (Gemma 3 text models, 1B to 27B) and gemma2 (Gemma 2, 2B to 27B), as llama.cpp builds
// them: the embedding scaled by sqrt(n_embd), a norm after the attention block and after the
// feed-forward block (before each is added to the residual stream), a GeGLU feed-forward
// (GELU-tanh), and sliding-window attention (hparams.is_swa): gemma3 on five layers of every
// six with their own rope base, and per-head Q/K norms; gemma2 on every other layer, with its
// attention scores and final logits soft-capped (self_attention.h, norm_and_logits). The norm
// weights in a GGUF already include Gemma's "1 +" (llama.cpp's converter adds it), so every
// norm is a plain rmsnorm.
//
// Per layer (names as traced):
//   attn_norm = rmsnorm(x)          Qcur .. attn_out = the attention block (self_attention.h)
//   attn_post_norm = rmsnorm(attn_out)                 ffn_inp = x + attn_post_norm
//   ffn_norm = rmsnorm(ffn_inp)     ffn_gate .. ffn_out = the GeGLU block (gated_ffn.h)
//   ffn_post_norm = rmsnorm(ffn_out)                   l_out = ffn_inp + ffn_post_norm
// after inp_embd, inp_scaled = inp_embd * sqrt(n_embd); at the end result_norm and
// result_output as in the llama family (the output tied to the embedding; gemma2 soft-caps it).
#include <optional>

#include "model/arch/architecture.h"
#include "model/arch/gated_ffn.h"
#include "model/arch/self_attention.h"

namespace tzero {

namespace {

class Gemma final : public Architecture {
 public:
  explicit Gemma(const Model& model) : model_(model), hp_(model.hparams()) {
    const size_t E = size_t(hp_.n_embd);
    x_ = residual_ = layout_.add(E);  // (n_tok, n_embd) residual stream
    xb_ = layout_.add(E);             // (n_tok, n_embd) normed input of a block
    proj_ = layout_.add(E);           // (n_tok, n_embd) a block's output, then its post-norm
    attn_.emplace(hp_, layout_);
    ffn_.emplace(hp_, Activation::GeluTanh, layout_);
    rows_ = layout_.add(E);                      // (n_out, n_embd) residual rows of the logits rows
    normed_ = out_ = layout_.add(E);             // (n_out, n_embd) their final norm
    logits_ = layout_.add(size_t(hp_.n_vocab));  // (n_logits, n_vocab)
  }

  void embed(const Pass& p) const override {
    p.ops->embed(model_.tok_embd(), x_);
    p.trace("inp_embd", -1, x_, p.n_tok);
    p.ops->scale(x_, hp_.embd_scale, p.n_tok);
    p.trace("inp_scaled", -1, x_, p.n_tok);
  }

  void layer(const Pass& p, int il) const override {
    BackendOps& o = *p.ops;
    const LayerWeights& L = model_.layers()[size_t(il)];
    const size_t n = p.n_tok;
    const float eps = hp_.rms_eps;
    o.rmsnorm(x_, L.attn_norm, eps, xb_, n);
    p.trace("attn_norm", il, xb_, n);
    attn_->run(p, il, L, xb_, proj_);
    o.rmsnorm(proj_, L.attn_post_norm, eps, proj_, n);
    p.trace("attn_post_norm", il, proj_, n);
    o.add(x_, proj_, n);
    p.trace("ffn_inp", il, x_, n);
    o.rmsnorm(x_, L.ffn_norm, eps, xb_, n);
    p.trace("ffn_norm", il, xb_, n);
    ffn_->run(p, il, L, xb_, proj_);
    o.rmsnorm(proj_, L.ffn_post_norm, eps, proj_, n);
    p.trace("ffn_post_norm", il, proj_, n);
    o.add(x_, proj_, n);
    p.trace("l_out", il, x_, n);
  }

  void output(const Pass& p) const override { norm_and_logits(p, model_, rows_, out_); }

 private:
  const Model& model_;
  const HParams& hp_;
  Act x_, xb_, proj_, rows_, out_;
  std::optional<SelfAttention> attn_;
  std::optional<GatedFeedForward> ffn_;
};

}  // namespace

std::unique_ptr<Architecture> make_gemma(const Model& model) {
  return std::make_unique<Gemma>(model);
}

}  // namespace tzero
