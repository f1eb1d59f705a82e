#include "model/arch/delta_net_layer.h"

#include <cmath>

namespace tzero {

DeltaNetLayer::DeltaNetLayer(const HParams& hp, ActLayout& layout) : hp_(hp) {
  spec_.n_k_heads = hp.ssm_n_group;
  spec_.n_v_heads = hp.ssm_dt_rank;
  spec_.d_k = hp.ssm_d_state;
  spec_.d_v = hp.delta_head_v_dim();
  spec_.tiled = hp.delta_tiled_heads;
  spec_.scale = 1.0f / std::sqrt(float(hp.ssm_d_state));
  const size_t C = hp.conv_channels(), I = size_t(hp.ssm_d_inner), Hv = size_t(hp.ssm_dt_rank);
  mixed_ = layout.add(C + I);
  qkv_ = layout.add(C);
  z_ = layout.add(I);
  ba_ = layout.add(2 * Hv);
  beta_ = layout.add(Hv);
  alpha_ = layout.add(Hv);
  conv_ = layout.add(C);
  o_ = layout.add(I);
}

void DeltaNetLayer::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  const size_t Hk = size_t(spec_.n_k_heads), Hv = size_t(spec_.n_v_heads), D = size_t(spec_.d_k),
               Dv = size_t(spec_.d_v), r = Hv / Hk;
  if (L.ssm_in.data) {
    // Per key head g: [q_g (D) | k_g (D) | v (r value heads) | z (r value heads)].
    const size_t W = 2 * D + 2 * r * Dv;
    o.matmul(L.ssm_in, x, mixed_, n);
    o.copy_cols(mixed_, W, 0, qkv_, D, 0, D, Hk, n);
    o.copy_cols(mixed_, W, D, qkv_, D, Hk * D, D, Hk, n);
    o.copy_cols(mixed_, W, 2 * D, qkv_, r * Dv, 2 * Hk * D, r * Dv, Hk, n);
    o.copy_cols(mixed_, W, 2 * D + r * Dv, z_, r * Dv, 0, r * Dv, Hk, n);
  } else {
    o.matmul(L.ssm_qkv, x, qkv_, n);
    o.matmul(L.ssm_z, x, z_, n);
  }
  p.trace("linear_attn_qkv_mixed", il, qkv_, n);
  p.trace("z", il, z_, n);
  if (L.ssm_ba.data) {
    // Per key head g: [b (r value heads) | a (r value heads)].
    o.matmul(L.ssm_ba, x, ba_, n);
    o.copy_cols(ba_, 2 * r, 0, beta_, r, 0, r, Hk, n);
    o.copy_cols(ba_, 2 * r, r, alpha_, r, 0, r, Hk, n);
  } else {
    o.matmul(L.ssm_beta, x, beta_, n);
    o.matmul(L.ssm_alpha, x, alpha_, n);
  }
  o.delta_gates(alpha_, beta_, L.ssm_dt, L.ssm_a, n);
  p.trace("beta", il, beta_, n);
  p.trace("gate", il, alpha_, n);
  o.short_conv(il, qkv_, L.ssm_conv1d, hp_.ssm_d_conv, conv_);
  p.trace("conv_output_silu", il, conv_, n);
  o.l2norm_heads(conv_, 2 * Hk * D, D, hp_.rms_eps, n);
  p.trace("qk_l2norm", il, conv_, n);
  o.delta_net(il, conv_, alpha_, beta_, o_, spec_);
  p.trace("attn_output", il, o_, n);
  o.rmsnorm_heads(o_, L.ssm_norm, hp_.rms_eps, Dv, n);
  o.glu(Activation::SiLU, z_, o_, z_, n);
  p.trace("final_output", il, z_, n);
  o.matmul(L.ssm_out, z_, out, n);
  p.trace("linear_attn_out", il, out, n);
}

}  // namespace tzero
