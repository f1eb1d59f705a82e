// nemotron_h (NVIDIA Nemotron-H, Nemotron Nano 2): one mixer per layer, chosen by the layer's
// kind (hparams.layer_kinds): a Mamba-2 block (mamba2_layer.h), attention without rotary
// embedding (self_attention.h, optional biases), or an MLP with a squared ReLU and no gate.
//
// Per layer (names as traced):
//   attn_norm = rmsnorm(x)
//   the mixer's output: ssm_out (Mamba-2), attn_out (attention) or ffn_out (MLP:
//     ffn_out = Wdown relu(Wup attn_norm + b_up)^2 + b_down)
//   l_out = x + the mixer's output
// then result_norm = rmsnorm(x of the logits rows), result_output = Woutput result_norm.
#include <optional>

#include "model/arch/architecture.h"
#include "model/arch/mamba2_layer.h"
#include "model/arch/self_attention.h"

namespace tzero {

namespace {

class NemotronH final : public Architecture {
 public:
  explicit NemotronH(const Model& model) : model_(model), hp_(model.hparams()) {
    const size_t E = size_t(hp_.n_embd);
    x_ = residual_ = layout_.add(E);  // (n_tok, n_embd) residual stream
    xb_ = layout_.add(E);             // (n_tok, n_embd) the normed input of the layer
    proj_ = layout_.add(E);           // (n_tok, n_embd) the mixer's output
    attn_.emplace(hp_, layout_);
    mamba_.emplace(hp_, layout_);
    up_ = layout_.add(size_t(hp_.n_ff > 0 ? hp_.n_ff : 1));  // (n_tok, n_ff) the MLP's inner
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
    switch (hp_.layer_kinds[size_t(il)]) {
      case LayerKind::Recurrent:
        mamba_->run(p, il, L, xb_, proj_);
        break;
      case LayerKind::Attention:
        attn_->run(p, il, L, xb_, proj_);
        break;
      case LayerKind::Mlp:
        o.matmul(L.w_up, xb_, up_, n);
        if (L.ffn_up_b) o.add_bias(up_, L.ffn_up_b, n);
        o.relu_sqr(up_, n);
        p.trace("ffn_relu_sqr", il, up_, n);
        o.matmul(L.w_down, up_, proj_, n);
        if (L.ffn_down_b) o.add_bias(proj_, L.ffn_down_b, n);
        p.trace("ffn_out", il, proj_, n);
        break;
    }
    o.add(x_, proj_, n);
    p.trace("l_out", il, x_, n);
  }

  void output(const Pass& p) const override { norm_and_logits(p, model_, rows_, out_); }

 private:
  const Model& model_;
  const HParams& hp_;
  Act x_, xb_, proj_, up_, rows_, out_;
  std::optional<SelfAttention> attn_;
  std::optional<Mamba2Layer> mamba_;
};

}  // namespace

std::unique_ptr<Architecture> make_nemotron_h(const Model& model) {
  return std::make_unique<NemotronH>(model);
}

}  // namespace tzero
