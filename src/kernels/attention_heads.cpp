#include "kernels/attention_heads.h"

#include <cmath>

#include "kernels/math.h"

namespace tzero {

void attn_merge(size_t n_q, size_t head_dim, bool first, const float* z_j, const float* o_j,
                size_t oj_stride, float* z, float* o, size_t o_stride) {
  for (size_t g = 0; g < n_q; ++g) {
    z[g] = first ? z_j[g] : z[g] + z_j[g];
    const float* src = o_j + g * oj_stride;
    float* dst = o + g * o_stride;
    if (first)
      for (size_t d = 0; d < head_dim; ++d) dst[d] = src[d];
    else
      for (size_t d = 0; d < head_dim; ++d) dst[d] = dst[d] + src[d];
  }
}

void attn_finish(size_t n_q, size_t head_dim, const float* z, float* o, size_t o_stride) {
  for (size_t g = 0; g < n_q; ++g)
    for (size_t d = 0; d < head_dim; ++d) o[g * o_stride + d] = o[g * o_stride + d] / z[g];
}

void attention_heads(const KernelSet& k, const float* q, size_t q_stride, size_t n_q,
                     const KvRows& kr, const KvRows& vr, size_t n_kv, size_t head_dim, float scale,
                     AttnScratch& sc, float* out, size_t out_stride, float softcap,
                     const float* sinks, size_t v_dim) {
  const size_t vd = v_dim ? v_dim : head_dim;
  const size_t ld = (n_kv + 15) / 16 * 16;
  if (sc.s.size() < n_q * ld) sc.s.resize(n_q * ld);
  if (sc.o_j.size() < n_q * vd) sc.o_j.resize(n_q * vd);
  sc.z_j.resize(n_q);
  sc.z.resize(n_q);
  sc.m.assign(n_q, -INFINITY);
  k.attn_scores(q, q_stride, n_q, kr, 0, n_kv, head_dim, scale, sc.s.data(), ld, sc.m.data());
  if (softcap > 0) attn_softcap_ref(sc.s.data(), ld, n_q, n_kv, softcap, sc.m.data());
  if (sinks) attn_sink_max(n_q, sinks, sc.m.data());
  for (size_t t0 = 0; t0 < n_kv; t0 += kAttnBlock) {
    const size_t t1 = t0 + kAttnBlock < n_kv ? t0 + kAttnBlock : n_kv;
    if (t0 == 0) {  // the first block's o goes straight into out
      k.attn_block(sc.s.data(), ld, n_q, sc.m.data(), vr, t0, t1, vd, sc.z.data(), out, out_stride);
      continue;
    }
    k.attn_block(sc.s.data() + t0, ld, n_q, sc.m.data(), vr, t0, t1, vd, sc.z_j.data(),
                 sc.o_j.data(), vd);
    attn_merge(n_q, vd, false, sc.z_j.data(), sc.o_j.data(), vd, sc.z.data(), out, out_stride);
  }
  if (sinks) attn_sink_sum(n_q, sinks, sc.m.data(), sc.z.data());
  attn_finish(n_q, vd, sc.z.data(), out, out_stride);
}

void attn_sink_max(size_t n_q, const float* sinks, float* m) {
  for (size_t g = 0; g < n_q; ++g) m[g] = std::fmax(m[g], sinks[g]);
}

void attn_sink_sum(size_t n_q, const float* sinks, const float* m, float* z) {
  for (size_t g = 0; g < n_q; ++g) z[g] = z[g] + exp_ref(sinks[g] - m[g]);
}

}  // namespace tzero
