#include "model/arch/moe_ffn.h"

namespace tzero {

namespace {

Activation expert_activation(const HParams& hp) {
  return hp.arch == Arch::GptOss ? Activation::SwigluOai : Activation::SiLU;
}

// Each slot's expert product: gate, up = W[e] x (with the experts' biases), act(gate) * up into
// gate, down = Wdown[e] of it (with its bias). A slot whose id is negative is left out.
void expert_products(BackendOps& o, const Pass* p, int il, Activation act, const LayerWeights& L,
                     Act x, Act ids, Act gate, Act up, Act down, size_t n) {
  o.matmul_experts(L.gate_exps, x, false, ids, gate, n);
  o.matmul_experts(L.up_exps, x, false, ids, up, n);
  if (L.gate_exps_b) {
    o.add_expert_bias(gate, L.gate_exps_b, ids, n);
    o.add_expert_bias(up, L.up_exps_b, ids, n);
  }
  if (p) p->trace("ffn_moe_gate", il, gate, n);
  if (p) p->trace("ffn_moe_up", il, up, n);
  o.glu(act, gate, up, gate, n);
  if (p) p->trace("ffn_moe_swiglu", il, gate, n);
  o.matmul_experts(L.down_exps, gate, true, ids, down, n);
  if (L.down_exps_b) o.add_expert_bias(down, L.down_exps_b, ids, n);
}

}  // namespace

ExpertSlots::ExpertSlots(const HParams& hp, ActLayout& layout) : act_(expert_activation(hp)) {
  const size_t F = size_t(hp.n_ff_exp), E = size_t(hp.n_embd);
  x_ = layout.add(E);     // (n, n_embd)
  ids_ = layout.add(1);   // (n, 1)
  gate_ = layout.add(F);  // (n, n_ff_exp)
  up_ = layout.add(F);    // (n, n_ff_exp)
  down_ = layout.add(E);  // (n, n_embd)
}

void ExpertSlots::run(BackendOps& o, const LayerWeights& L, size_t n) const {
  expert_products(o, nullptr, -1, act_, L, x_, ids_, gate_, up_, down_, n);
}

MoeFeedForward::MoeFeedForward(const HParams& hp, ActLayout& layout)
    : shared_(hp.arch == Arch::Qwen2Moe || hp.arch == Arch::Qwen3Next ||
              hp.arch == Arch::Qwen35Moe || hp.n_expert_shared > 0),
      act_(expert_activation(hp)) {
  spec_.n_expert = hp.n_expert;
  spec_.n_used = hp.n_expert_used;
  spec_.norm_weights = hp.expert_weights_norm;
  spec_.gating = hp.expert_gating;
  spec_.n_groups = hp.n_expert_groups;
  spec_.n_groups_used = hp.n_expert_groups_used;
  spec_.scale = hp.expert_weights_scale;
  const size_t X = size_t(hp.n_expert), k = size_t(hp.n_expert_used), F = size_t(hp.n_ff_exp),
               E = size_t(hp.n_embd);
  logits_ = layout.add(X);    // (n_tok, n_expert) router logits
  probs_ = layout.add(X);     // (n_tok, n_expert) their softmax
  ids_ = layout.add(k);       // (n_tok, k) chosen expert ids (as floats), rank order
  weights_ = layout.add(k);   // (n_tok, k) their weights
  gate_ = layout.add(k * F);  // (n_tok, k, n_ff_exp) per slot
  up_ = layout.add(k * F);    // (n_tok, k, n_ff_exp)
  down_ = layout.add(k * E);  // (n_tok, k, n_embd)
  if (shared_) {
    const size_t S = hp.n_expert_shared > 0 ? size_t(hp.n_ff_exp) * size_t(hp.n_expert_shared)
                                            : size_t(hp.n_ff_shexp);
    sh_gate_ = layout.add(S);   // (n_tok, n_ff_shexp)
    sh_up_ = layout.add(S);     // (n_tok, n_ff_shexp)
    sh_out_ = layout.add(E);    // (n_tok, n_embd)
    sh_logit_ = layout.add(1);  // (n_tok, 1)
  }
}

void MoeFeedForward::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  o.matmul(L.gate_inp, x, logits_, n);
  if (L.gate_inp_b) o.add_bias(logits_, L.gate_inp_b, n);
  p.trace("ffn_moe_logits", il, logits_, n);
  MoeSpec spec = spec_;
  spec.selection_bias = L.exp_probs_b;
  o.moe_route(logits_, spec, probs_, ids_, weights_, n);
  p.trace("ffn_moe_probs", il, probs_, n);
  p.trace("ffn_moe_topk", il, ids_, n);
  p.trace("ffn_moe_weights", il, weights_, n);
  // Slots whose experts live on other ranks are sent there first (their ids marked -1 here),
  // computed there while this rank computes its own, and their down rows come back before the
  // combine (CPU only: the host rows).
  if (p.experts) p.experts->send(il, o.host_rows(x), o.host_rows(ids_), n, ids_.len);
  try {
    expert_products(o, &p, il, act_, L, x, ids_, gate_, up_, down_, n);
  } catch (...) {
    if (p.experts) {  // (the answers taken all the same: no request is left out there)
      try {
        p.experts->receive(il, o.host_rows(ids_), o.host_rows(down_), n, ids_.len);
      } catch (...) {
      }
    }
    throw;
  }
  if (p.experts) p.experts->receive(il, o.host_rows(ids_), o.host_rows(down_), n, ids_.len);
  p.trace("ffn_moe_down", il, down_, n);
  o.moe_combine(down_, weights_, out, n);
  p.trace("ffn_moe_out", il, out, n);
  if (!shared_) return;
  o.matmul(L.gate_shexp, x, sh_gate_, n);
  o.matmul(L.up_shexp, x, sh_up_, n);
  o.glu(Activation::SiLU, sh_gate_, sh_up_, sh_gate_, n);
  o.matmul(L.down_shexp, sh_gate_, sh_out_, n);
  p.trace("ffn_shexp", il, sh_out_, n);
  if (L.gate_inp_shexp.data) {  // qwen2moe's gate; glm4moe's shared experts are ungated
    o.matmul(L.gate_inp_shexp, x, sh_logit_, n);
    p.trace("ffn_shexp_gate_inp", il, sh_logit_, n);
    o.scale_by_sigmoid(sh_out_, sh_logit_, n);
    p.trace("ffn_shexp_out", il, sh_out_, n);
  }
  o.add(out, sh_out_, n);
  p.trace("ffn_out", il, out, n);
}

}  // namespace tzero
