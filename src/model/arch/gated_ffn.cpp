#include "model/arch/gated_ffn.h"

namespace tzero {

GatedFeedForward::GatedFeedForward(const HParams& hp, Activation act, ActLayout& layout)
    : act_(act) {
  gate_ = layout.add(size_t(hp.n_ff));  // (n_tok, n_ff)
  up_ = layout.add(size_t(hp.n_ff));    // (n_tok, n_ff)
}

void GatedFeedForward::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  o.matmul(L.w_gate, x, gate_, n);
  o.matmul(L.w_up, x, up_, n);
  p.trace("ffn_gate", il, gate_, n);
  p.trace("ffn_up", il, up_, n);
  o.glu(act_, gate_, up_, gate_, n);
  p.trace(act_ == Activation::SiLU ? "ffn_swiglu" : "ffn_geglu", il, gate_, n);
  o.matmul(L.w_down, gate_, out, n);
  p.trace("ffn_out", il, out, n);
}

}  // namespace tzero
