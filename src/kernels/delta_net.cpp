#include "kernels/delta_net.h"

#include <cmath>
#include <vector>

#include "kernels/dot.h"
#include "kernels/math.h"
#include "kernels/moe.h"

namespace tzero {

void short_conv_cols(const float* x, size_t n_ch, size_t c0, size_t c1, const float* w, size_t K,
                     float* state, float* out, const float* bias) {
  const size_t H = K - 1;  // state rows
  for (size_t c = c0; c < c1; ++c) {
    const float* wc = w + c * K;
    float acc = 0.0f;
    for (size_t j = 0; j < H; ++j) {
      const float prod = wc[j] * state[j * n_ch + c];
      acc = acc + prod;
    }
    const float prod = wc[H] * x[c];
    acc = acc + prod;
    out[c] = bias ? acc + bias[c] : acc;
    for (size_t j = 0; j + 1 < H; ++j) state[j * n_ch + c] = state[(j + 1) * n_ch + c];
    if (H > 0) state[(H - 1) * n_ch + c] = x[c];
  }
}

void short_conv_silu_cols(const float* x, size_t n_ch, size_t c0, size_t c1, const float* w,
                          size_t K, float* state, float* out) {
  short_conv_cols(x, n_ch, c0, c1, w, K, state, out);
  for (size_t c = c0; c < c1; ++c) out[c] = silu_ref(out[c]);
}

void short_conv_silu_ref(const float* x, size_t n_ch, const float* w, size_t K, float* state,
                         float* out) {
  short_conv_silu_cols(x, n_ch, 0, n_ch, w, K, state, out);
}

void l2norm_ref(float* x, size_t n, float eps, DotF32Fn dot) {
  const float ss = dot(x, x, n);
  const float r = 1.0f / std::fmax(std::sqrt(ss), eps);
  for (size_t i = 0; i < n; ++i) x[i] = x[i] * r;
}

void delta_gates_ref(float* a, float* b, const float* dt_bias, const float* A, size_t n_heads) {
  for (size_t h = 0; h < n_heads; ++h) {
    const float sp = softplus_ref(a[h] + dt_bias[h]);
    a[h] = sp * A[h];
    b[h] = sigmoid_ref(b[h]);
  }
}

void delta_rule_rows(float* S, size_t d_k, size_t j0, size_t j1, const float* q, const float* k,
                     const float* v, float g, float beta, float scale, float* out, DotF32Fn dot) {
  const float decay = exp_ref(g);
  for (size_t j = j0; j < j1; ++j) {
    float* row = S + j * d_k;
    for (size_t i = 0; i < d_k; ++i) row[i] = row[i] * decay;
    const float kv = dot(row, k, d_k);
    const float delta = (v[j] - kv) * beta;
    for (size_t i = 0; i < d_k; ++i) {
      const float u = k[i] * delta;
      row[i] = row[i] + u;
    }
    out[j] = dot(row, q, d_k) * scale;
  }
}

void delta_rule_ref(float* S, size_t d_k, size_t d_v, const float* q, const float* k,
                    const float* v, float g, float beta, float scale, float* out) {
  delta_rule_rows(S, d_k, 0, d_v, q, k, v, g, beta, scale, out, dot_f32_ref);
}

void delta_chunk_fast(float* S, size_t d_k, size_t d_v, size_t n, const float* q, const float* k,
                      size_t qk_stride, const float* v, size_t v_stride, const float* g,
                      const float* beta, size_t gb_stride, float scale, float* out,
                      size_t out_stride, DotF32Fn dot) {
  auto Q = [&](size_t t) { return q + t * qk_stride; };
  auto Kr = [&](size_t t) { return k + t * qk_stride; };
  std::vector<float> G(n), A(n * n, 0.0f), QK(n * n, 0.0f), U(n * d_v), W(n * d_k);
  float acc = 0.0f;
  for (size_t t = 0; t < n; ++t) G[t] = acc = acc + g[t * gb_stride];
  for (size_t t = 0; t < n; ++t)
    for (size_t u = 0; u <= t; ++u) {
      const float e = exp_ref(G[t] - G[u]);
      if (u < t) A[t * n + u] = beta[t * gb_stride] * e * dot(Kr(t), Kr(u), d_k);
      QK[t * n + u] = e * dot(Q(t), Kr(u), d_k);
    }
  // Forward substitution: X_t = B_t - sum over u < t of A[t][u] X_u.
  for (size_t t = 0; t < n; ++t) {
    const float b = beta[t * gb_stride], eb = b * exp_ref(G[t]);
    for (size_t j = 0; j < d_v; ++j) U[t * d_v + j] = b * v[t * v_stride + j];
    for (size_t i = 0; i < d_k; ++i) W[t * d_k + i] = eb * Kr(t)[i];
    for (size_t u = 0; u < t; ++u) {
      const float a = A[t * n + u];
      for (size_t j = 0; j < d_v; ++j) U[t * d_v + j] -= a * U[u * d_v + j];
      for (size_t i = 0; i < d_k; ++i) W[t * d_k + i] -= a * W[u * d_k + i];
    }
  }
  std::vector<float> delta(n), qs(n);
  const float e_last = exp_ref(G[n - 1]);
  for (size_t j = 0; j < d_v; ++j) {
    float* row = S + j * d_k;
    for (size_t t = 0; t < n; ++t) {
      delta[t] = U[t * d_v + j] - dot(&W[t * d_k], row, d_k);
      qs[t] = dot(Q(t), row, d_k);
    }
    for (size_t t = 0; t < n; ++t) {
      float o = exp_ref(G[t]) * qs[t];
      for (size_t u = 0; u <= t; ++u) o += QK[t * n + u] * delta[u];
      out[t * out_stride + j] = o * scale;
    }
    for (size_t i = 0; i < d_k; ++i) row[i] *= e_last;
    for (size_t u = 0; u < n; ++u) {
      const float c = exp_ref(G[n - 1] - G[u]) * delta[u];
      for (size_t i = 0; i < d_k; ++i) row[i] += c * Kr(u)[i];
    }
  }
}

}  // namespace tzero
