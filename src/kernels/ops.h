// Scalar reference kernels of the non-matmul ops, with their canonical orders ("ops-v1").
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/attention.h"

namespace tzero {

// RMSNorm: ss = sum of x[k]*x[k] in the 16-lane fma order of dot_f32_ref (dot.h);
// mean = ss / float(n); scale = 1 / sqrtf(mean + eps); out[i] = (x[i] * scale) * w[i].
// out may alias x.
void rmsnorm_ref(const float* x, const float* w, float eps, size_t n, float* out);

// YaRN's extrapolation mix (llama.cpp's ggml rope with ext_factor != 0): pair i takes
// theta = interp * (1 - mix) + extrap * mix, mix = ramp(i) * ext_factor, where
// ramp(i) = 1 - clamp((i - low) / max(0.001, high - low), 0, 1) and [low, high] is the correction
// range of beta_fast and beta_slow for n_ctx_orig (computed in float, floor and ceil, as ggml);
// every cos and sin also takes (1 + 0.1 ln(1 / freq_scale)).
struct RopeYarn {
  int n_ctx_orig = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double ext_factor = 1.0;
  // true: cos and sin are not multiplied by (1 + 0.1 ln(1 / freq_scale)) (deepseek2 with
  // yarn_log_multiplier, whose llama.cpp attention factor cancels it exactly).
  bool unit_magnitude = false;
};

// Rotary position embedding tables, built once in double and rounded once to float:
// theta(pos, i) = pos * base^(-2i / n_rot) for i < n_rot / 2.
class RopeTable {
 public:
  // angle(p, i) = (p * freq_scale) * base^(-2i / n_rot) [/ freq_factors[i]], in double; each
  // entry cos(angle) [* mscale] and sin(angle) [* mscale] rounded once to float. freq_scale is
  // 1 / the linear rope scaling factor (1: none); freq_factors (n_rot / 2 floats, or null) are
  // LongRoPE's per-frequency divisors (phi3); mscale its attention factor (1: none).
  // With yarn: theta_extrap = p * base^(-2i / n_rot) [/ freq_factors[i]], theta_interp =
  // freq_scale * theta_extrap, mixed as RopeYarn says.
  RopeTable(int n_rot, int n_pos, double base, double freq_scale = 1.0,
            const float* freq_factors = nullptr, double mscale = 1.0,
            const RopeYarn* yarn = nullptr);
  // YaRN's correction range [low, high] of pair indices (ggml_rope_yarn_corr_dims).
  static void yarn_range(int n_rot, const RopeYarn& y, double base, float* low, float* high);
  int n_rot() const { return n_rot_; }
  int n_pos() const { return n_pos_; }
  const float* cos_sin(int pos) const { return &table_[size_t(pos) * size_t(n_rot_)]; }

 private:
  int n_rot_, n_pos_;
  std::vector<float> table_;  // (n_pos, n_rot / 2, 2): cos, sin
};

// Rotates the first n_rot elements of one head vector in place. Pairs are (2i, 2i+1) in the
// interleaved layout (llama) and (i, i + n_rot/2) in the neox layout (qwen2, qwen3).
// With c, s from the table: a' = a*c - b*s, b' = a*s + b*c, each product rounded, no FMA.
void rope_ref(float* x, int pos, const RopeTable& table, bool neox);

// SwiGLU: out[i] = silu_ref(gate[i]) * up[i]. out may alias gate or up.
void swiglu_ref(const float* gate, const float* up, size_t n, float* out);
// GeGLU (Gemma): out[i] = gelu_ref(gate[i]) * up[i] (gelu-v1). out may alias gate or up.
void geglu_ref(const float* gate, const float* up, size_t n, float* out);
// gpt-oss's clamped SwiGLU (swiglu-oai-v1, ggml's swiglu_oai with alpha 1.702, limit 7):
// x = fminf(gate[i], 7), y = fminf(fmaxf(up[i], -7), 7),
// out[i] = (x / (1 + exp_ref(1.702f * -x))) * (y + 1), each step rounded. out may alias.
void swiglu_oai_ref(const float* gate, const float* up, size_t n, float* out);

}  // namespace tzero
