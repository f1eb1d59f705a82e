#include "model/arch/mamba2_layer.h"

namespace tzero {

Mamba2Layer::Mamba2Layer(const HParams& hp, ActLayout& layout) : hp_(hp) {
  spec_.n_heads = hp.ssm_dt_rank;
  spec_.head_dim = hp.ssm_d_inner / hp.ssm_dt_rank;
  spec_.n_groups = hp.ssm_n_group;
  spec_.d_state = hp.ssm_d_state;
  const size_t I = size_t(hp.ssm_d_inner), C = hp.conv_channels(), H = size_t(hp.ssm_dt_rank);
  zxbcdt_ = layout.add(I + C + H);
  z_ = layout.add(I);
  xbc_ = layout.add(C);
  dt_ = layout.add(H);
  conv_ = layout.add(C);
  y_ = layout.add(I);
}

void Mamba2Layer::run(const Pass& p, int il, const LayerWeights& L, Act x, Act out) const {
  BackendOps& o = *p.ops;
  const size_t n = p.n_tok;
  const size_t I = size_t(hp_.ssm_d_inner), C = hp_.conv_channels(), H = size_t(hp_.ssm_dt_rank);
  o.matmul(L.ssm_in, x, zxbcdt_, n);
  p.trace("zxBCdt", il, zxbcdt_, n);
  o.copy_cols(zxbcdt_, 0, 0, z_, 0, 0, I, 1, n);
  o.copy_cols(zxbcdt_, 0, I, xbc_, 0, 0, C, 1, n);
  o.copy_cols(zxbcdt_, 0, I + C, dt_, 0, 0, H, 1, n);
  o.short_conv(il, xbc_, L.ssm_conv1d, hp_.ssm_d_conv, conv_, L.ssm_conv1d_b);
  p.trace("conv_output_silu", il, conv_, n);
  o.ssm_scan(il, conv_, dt_, L.ssm_dt, L.ssm_a, L.ssm_d, y_, spec_);
  p.trace("y_ssm", il, y_, n);
  o.glu(Activation::SiLU, z_, y_, y_, n);  // y * silu(z): the gate before the norm
  o.rmsnorm_groups(y_, L.ssm_norm, hp_.rms_eps, I / size_t(hp_.ssm_n_group), n);
  p.trace("y_norm", il, y_, n);
  o.matmul(L.ssm_out, y_, out, n);
  p.trace("ssm_out", il, out, n);
}

}  // namespace tzero
