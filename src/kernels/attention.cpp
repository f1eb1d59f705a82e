#include "kernels/attention.h"

#include <cmath>
#include <vector>

#include "kernels/dot.h"
#include "kernels/math.h"

namespace tzero {

void attn_scores_ref(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                     size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m) {
  for (size_t g = 0; g < n_q; ++g)
    for (size_t t = t0; t < t1; ++t) {
      const float x = dot_f32_ref(q + g * q_stride, k.row(t), head_dim) * scale;
      s[g * ld + (t - t0)] = x;
      m[g] = std::fmax(m[g], x);
    }
}

void attn_block_ref(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                    size_t t1, size_t head_dim, float* z, float* o, size_t o_stride) {
  const size_t n = t1 - t0;
  for (size_t g = 0; g < n_q; ++g) {
    float* e = s + g * ld;
    for (size_t i = 0; i < n; ++i) e[i] = exp_ref(e[i] - m[g]);
    z[g] = sum_f32_ref(e, n);
    float* og = o + g * o_stride;
    for (size_t d = 0; d < head_dim; ++d) og[d] = 0.0f;
    for (size_t t = t0; t < t1; ++t) {
      const float* vt = v.row(t);
      for (size_t d = 0; d < head_dim; ++d) og[d] = std::fma(e[t - t0], vt[d], og[d]);
    }
  }
}

void attn_softcap_ref(float* s, size_t ld, size_t n_q, size_t n, float cap, float* m) {
  for (size_t g = 0; g < n_q; ++g) {
    m[g] = -INFINITY;
    for (size_t i = 0; i < n; ++i) {
      s[g * ld + i] = softcap_ref(s[g * ld + i], cap);
      m[g] = std::fmax(m[g], s[g * ld + i]);
    }
  }
}

void attention_head_ref(const float* q, const KvRows& k, const KvRows& v, size_t n_kv,
                        size_t head_dim, float scale, float* scratch, float* out, float softcap,
                        const float* sink) {
  float m = -INFINITY;
  attn_scores_ref(q, 0, 1, k, 0, n_kv, head_dim, scale, scratch, n_kv, &m);
  if (softcap > 0) attn_softcap_ref(scratch, n_kv, 1, n_kv, softcap, &m);
  if (sink) m = std::fmax(m, *sink);
  std::vector<float> o(head_dim), o_j(head_dim);
  float z = 0.0f;
  for (size_t t0 = 0; t0 < n_kv; t0 += kAttnBlock) {
    const size_t t1 = t0 + kAttnBlock < n_kv ? t0 + kAttnBlock : n_kv;
    float z_j;
    attn_block_ref(scratch + t0, 0, 1, &m, v, t0, t1, head_dim, &z_j, o_j.data(), 0);
    if (t0 == 0) {
      z = z_j;
      o = o_j;
    } else {
      z = z + z_j;
      for (size_t d = 0; d < head_dim; ++d) o[d] = o[d] + o_j[d];
    }
  }
  if (sink) z = z + exp_ref(*sink - m);
  for (size_t d = 0; d < head_dim; ++d) out[d] = o[d] / z;
}

}  // namespace tzero
