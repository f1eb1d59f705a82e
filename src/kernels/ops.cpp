#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/dot.h"
#include "kernels/math.h"

namespace tzero {

void rmsnorm_ref(const float* x, const float* w, float eps, size_t n, float* out) {
  const float ss = dot_f32_ref(x, x, n);
  const float mean = ss / float(n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

void RopeTable::yarn_range(int n_rot, const RopeYarn& y, double base, float* low, float* high) {
  // The dimension whose wavelength fits `rotations` times in n_ctx_orig, in float as ggml.
  auto dim = [&](double rotations) {
    return float(n_rot) *
           std::log(float(y.n_ctx_orig) / (float(rotations) * 2.0f * 3.14159265358979323846f)) /
           (2.0f * std::log(float(base)));
  };
  *low = std::max(0.0f, std::floor(dim(y.beta_fast)));
  *high = std::min(float(n_rot - 1), std::ceil(dim(y.beta_slow)));
}

RopeTable::RopeTable(int n_rot, int n_pos, double base, double freq_scale,
                     const float* freq_factors, double mscale, const RopeYarn* yarn)
    : n_rot_(n_rot), n_pos_(n_pos), table_(size_t(n_pos) * size_t(n_rot)) {
  const int half = n_rot / 2;
  std::vector<double> freq(half);
  for (int i = 0; i < half; ++i) {
    freq[i] = std::pow(base, -2.0 * i / n_rot);
    if (freq_factors) freq[i] /= double(freq_factors[i]);
  }
  if (yarn && yarn->ext_factor != 0) {
    float low = 0, high = 0;
    yarn_range(n_rot, *yarn, base, &low, &high);
    std::vector<double> mix(half);
    for (int i = 0; i < half; ++i) {
      const double y = (double(i) - low) / std::max(0.001, double(high) - low);
      mix[i] = (1.0 - std::min(1.0, std::max(0.0, y))) * yarn->ext_factor;
    }
    const double m =
        yarn->unit_magnitude ? mscale : mscale * (1.0 + 0.1 * std::log(1.0 / freq_scale));
    for (int p = 0; p < n_pos; ++p)
      for (int i = 0; i < half; ++i) {
        const double extrap = double(p) * freq[i];
        const double angle = freq_scale * extrap * (1.0 - mix[i]) + extrap * mix[i];
        table_[size_t(p) * n_rot + 2 * i] = float(std::cos(angle) * m);
        table_[size_t(p) * n_rot + 2 * i + 1] = float(std::sin(angle) * m);
      }
    return;
  }
  for (int p = 0; p < n_pos; ++p)
    for (int i = 0; i < half; ++i) {
      const double pos = freq_scale == 1.0 ? double(p) : double(p) * freq_scale;
      const double angle = pos * freq[i];
      const double c = std::cos(angle), s = std::sin(angle);
      table_[size_t(p) * n_rot + 2 * i] = float(mscale == 1.0 ? c : c * mscale);
      table_[size_t(p) * n_rot + 2 * i + 1] = float(mscale == 1.0 ? s : s * mscale);
    }
}

void rope_ref(float* x, int pos, const RopeTable& table, bool neox) {
  const int half = table.n_rot() / 2;
  const float* cs = table.cos_sin(pos);
  for (int i = 0; i < half; ++i) {
    const int ia = neox ? i : 2 * i;
    const int ib = neox ? i + half : 2 * i + 1;
    const float c = cs[2 * i], s = cs[2 * i + 1];
    const float a = x[ia], b = x[ib];
    x[ia] = a * c - b * s;
    x[ib] = a * s + b * c;
  }
}

void swiglu_ref(const float* gate, const float* up, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = silu_ref(gate[i]) * up[i];
}

void geglu_ref(const float* gate, const float* up, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = gelu_ref(gate[i]) * up[i];
}

void swiglu_oai_ref(const float* gate, const float* up, size_t n, float* out) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (size_t i = 0; i < n; ++i) {
    const float x = std::fmin(gate[i], kLimit);
    const float y = std::fmin(std::fmax(up[i], -kLimit), kLimit);
    const float g = x / (1.0f + exp_ref(kAlpha * -x));
    out[i] = g * (y + 1.0f);
  }
}

}  // namespace tzero
