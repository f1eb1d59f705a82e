#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/math.h"
#include "kernels/moe.h"
#include "kernels/ops.h"

namespace tzero {

namespace {
// llama.cpp's YaRN settings of the model (null unless its rope scaling is yarn).
const RopeYarn* yarn_of(const HParams& hp, RopeYarn& y) {
  if (hp.rope_scaling != RopeScaling::Yarn) return nullptr;
  y.n_ctx_orig = hp.n_ctx_orig;
  y.beta_fast = hp.yarn_beta_fast;
  y.beta_slow = hp.yarn_beta_slow;
  y.ext_factor = 1.0;
  y.unit_magnitude = hp.yarn_unit_magnitude;
  return &y;
}
}  // namespace

// Sliding-window layers take their own base and scale and the model's attention factor and
// YaRN settings, as llama.cpp's per-layer rope does.
CpuBackend::CpuBackend(const HParams& hp, const ActLayout& layout, ThreadPool& pool,
                       const KernelSet& kernels, bool fast, int n_ctx, const float* rope_factors)
    : pool_(pool),
      kern_(kernels),
      fast_(fast),
      rope_(hp.n_rot, n_ctx, hp.rope_base, hp.rope_freq_scale, rope_factors, hp.rope_attn_factor,
            yarn_of(hp, yarn_)),
      rope_swa_(hp.n_swa > 0 ? hp.n_rot : 0, hp.n_swa > 0 ? n_ctx : 0, hp.rope_base_swa,
                hp.rope_freq_scale_swa, nullptr, hp.rope_attn_factor, yarn_of(hp, yarn_)) {
  bufs_.resize(layout.lens().size());
}

void CpuBackend::begin(const ForwardBatch& batch, KvStore& kv) {
  batch_ = &batch;
  kv_ = &kv;
  if (kv.n_state_slots() > 0) group_sequences();  // a model with recurrent layers
}

void CpuBackend::upload(Act dst, const float* host, size_t rows) {
  float* d = out(dst, rows);
  if (d != host) std::memcpy(d, host, rows * dst.len * sizeof(float));
}

void CpuBackend::download(Act src, size_t rows, float* host) {
  const float* s = in(src);
  if (s != host) std::memcpy(host, s, rows * src.len * sizeof(float));
}

void CpuBackend::embed(const Matrix& table, Act o) {
  const size_t n = batch_->size();
  float* y = out(o, n);
  for (size_t t = 0; t < n; ++t)
    matrix_row_to_float(table, size_t(batch_->tokens[t]), &y[t * o.len]);
}

void CpuBackend::rmsnorm(Act x, const float* w, float eps, Act o, size_t rows) {
  const float* a = in(x);
  float* y = out(o, rows);
  for (size_t t = 0; t < rows; ++t) kern_.rmsnorm(&a[t * x.len], w, eps, x.len, &y[t * o.len]);
}

void CpuBackend::rmsnorm_heads(Act x, const float* w, float eps, size_t head_dim, size_t rows) {
  float* a = in(x);
  for (size_t r = 0; r < rows * (x.len / head_dim); ++r)
    kern_.rmsnorm(&a[r * head_dim], w, eps, head_dim, &a[r * head_dim]);
}

void CpuBackend::matmul(const Matrix& w, Act x, Act y, size_t rows) {
  // Fast mode schedules matmul rows dynamically but keeps whole rows: splitting a reduction
  // across threads costs memory locality on a CPU (measured: half the decode speed). Its
  // nondeterminism comes from the split attention.
  if (fast_)
    matmul_fast(pool_, kern_, w, in(x), rows, out(y, rows), mm_);
  else
    tzero::matmul(pool_, kern_, w, in(x), rows, out(y, rows), mm_);  // x is never y
}

void CpuBackend::add_bias(Act y, const float* b, size_t rows) {
  float* a = in(y);
  for (size_t t = 0; t < rows; ++t)
    for (size_t i = 0; i < y.len; ++i) a[t * y.len + i] += b[i];
}

void CpuBackend::rope(Act x, int n_heads, int head_dim, RopeLayout layout, RopeFreqs freqs) {
  const RopeTable& table = freqs == RopeFreqs::SlidingWindow ? rope_swa_ : rope_;
  check(table.n_rot() > 0, "internal: no rope table for the sliding-window layers");
  float* a = in(x);
  for (size_t t = 0; t < batch_->size(); ++t)
    for (int h = 0; h < n_heads; ++h)
      rope_ref(&a[t * x.len + size_t(h) * size_t(head_dim)], batch_->pos[t], table,
               layout == RopeLayout::Neox);
}

void CpuBackend::kv_write(int layer, Act k, Act v) {
  const float* kk = in(k);
  const float* vv = in(v);
  const int bs = kv_->block_size();
  for (size_t t = 0; t < batch_->size(); ++t) {
    const int p = batch_->pos[t];
    kv_->write(layer, batch_->tables[size_t(batch_->seq[t])][p / bs], p % bs, &kk[t * k.len],
               &vv[t * v.len]);
  }
}

void CpuBackend::attention(int layer, Act q, Act o, const AttentionSpec& spec) {
  gather_kv_rows(layer, size_t(spec.n_head_kv), size_t(spec.head_dim));
  float* att = out(o, batch_->size());
  if (fast_)
    attention_fast(in(q), att, spec);
  else
    attention_canonical(in(q), att, spec);
}

void CpuBackend::add(Act x, Act y, size_t rows) {
  float* a = in(x);
  const float* b = in(y);
  for (size_t i = 0; i < rows * x.len; ++i) a[i] += b[i];
}

void CpuBackend::scale(Act x, float s, size_t rows) {
  float* a = in(x);
  for (size_t i = 0; i < rows * x.len; ++i) a[i] *= s;
}

void CpuBackend::softcap(Act x, float cap, size_t rows) {
  float* a = in(x);
  for (size_t i = 0; i < rows * x.len; ++i) a[i] = softcap_ref(a[i], cap);
}

void CpuBackend::glu(Activation act, Act gate, Act up, Act o, size_t rows) {
  float* y = out(o, rows);
  switch (act) {
    case Activation::SiLU:
      kern_.swiglu(in(gate), in(up), rows * gate.len, y);
      return;
    case Activation::GeluTanh:
      kern_.geglu(in(gate), in(up), rows * gate.len, y);
      return;
    case Activation::SwigluOai: {
      const float* g = in(gate);
      const float* u = in(up);
      const size_t n = rows * gate.len, chunk = 4096;  // element-wise: any split, same bits
      pool_.run((n + chunk - 1) / chunk, [&](size_t c0, size_t c1) {
        const size_t i0 = c0 * chunk, i1 = std::min(n, c1 * chunk);
        swiglu_oai_ref(g + i0, u + i0, i1 - i0, y + i0);
      });
      return;
    }
  }
}

void CpuBackend::copy_cols(Act src, size_t src_stride, size_t src_off, Act dst, size_t dst_stride,
                           size_t dst_off, size_t width, size_t groups, size_t rows) {
  const float* a = in(src);
  float* b = dst.id == src.id ? in(dst) : out(dst, rows);
  for (size_t t = 0; t < rows; ++t)
    for (size_t g = 0; g < groups; ++g)
      std::memcpy(&b[t * dst.len + g * dst_stride + dst_off],
                  &a[t * src.len + g * src_stride + src_off], width * sizeof(float));
}

void CpuBackend::add_expert_bias(Act y, const float* b, Act ids, size_t rows) {
  const size_t k = ids.len, n = y.len / k;
  float* a = in(y);
  const float* id = in(ids);
  for (size_t t = 0; t < rows; ++t)
    for (size_t j = 0; j < k; ++j) {
      if (id[t * k + j] < 0) continue;  // (left out: another rank's expert)
      const float* be = b + size_t(id[t * k + j]) * n;
      float* s = a + t * y.len + j * n;
      for (size_t i = 0; i < n; ++i) s[i] = s[i] + be[i];
    }
}

void CpuBackend::moe_route(Act logits, const MoeSpec& spec, Act probs, Act ids, Act weights,
                           size_t rows) {
  const size_t E = size_t(spec.n_expert), k = size_t(spec.n_used);
  const float* l = in(logits);
  float* p = out(probs, rows);
  float* id = out(ids, rows);
  float* w = out(weights, rows);
  expert_ids_.resize(k);
  for (size_t t = 0; t < rows; ++t) {
    if (spec.gating == MoeGating::Sigmoid || spec.gating == MoeGating::GroupedSoftmax) {
      sel_.resize(E);
      moe_route_sigmoid_ref(&l[t * logits.len], spec.selection_bias, E, k, size_t(spec.n_groups),
                            size_t(spec.n_groups_used), spec.norm_weights, spec.scale,
                            &p[t * probs.len], expert_ids_.data(), &w[t * weights.len], sel_.data(),
                            spec.gating == MoeGating::GroupedSoftmax);
    } else if (spec.gating == MoeGating::SoftmaxWeight)
      moe_route_softmax_weight_ref(&l[t * logits.len], E, k, &p[t * probs.len], expert_ids_.data(),
                                   &w[t * weights.len]);
    else
      moe_route_ref(&l[t * logits.len], E, k, spec.norm_weights, &p[t * probs.len],
                    expert_ids_.data(), &w[t * weights.len]);
    for (size_t j = 0; j < k; ++j) id[t * ids.len + j] = float(expert_ids_[j]);
  }
}

void CpuBackend::matmul_experts(const ExpertMatrix& w, Act x, bool x_per_slot, Act ids, Act y,
                                size_t rows) {
  const size_t k = ids.len;
  const float* id = in(ids);
  expert_ids_.resize(rows * k);
  for (size_t i = 0; i < rows * k; ++i) expert_ids_[i] = int32_t(id[i]);
  tzero::matmul_experts(pool_, kern_, w, in(x), x_per_slot, expert_ids_.data(), rows, k,
                        out(y, rows), experts_);
}

void CpuBackend::moe_combine(Act y, Act weights, Act o, size_t rows) {
  const size_t k = weights.len, n = o.len;
  const float* a = in(y);
  const float* w = in(weights);
  float* r = out(o, rows);
  if (fast_) return moe_combine_arrival(pool_, a, w, rows, k, n, r);
  for (size_t t = 0; t < rows; ++t) moe_combine_ref(&a[t * y.len], &w[t * k], k, n, &r[t * n]);
}

void CpuBackend::scale_by_sigmoid(Act x, Act g, size_t rows) {
  float* a = in(x);
  const float* b = in(g);
  for (size_t t = 0; t < rows; ++t) {
    const float s = sigmoid_ref(b[t * g.len]);
    for (size_t i = 0; i < x.len; ++i) a[t * x.len + i] *= s;
  }
}

void CpuBackend::gather_logits_rows(Act x, Act o) {
  const size_t n = batch_->logits_rows.size();
  const float* a = in(x);
  float* y = out(o, n);
  for (size_t r = 0; r < n; ++r)
    std::memcpy(&y[r * o.len], &a[size_t(batch_->logits_rows[r]) * x.len], x.len * sizeof(float));
}

}  // namespace tzero
