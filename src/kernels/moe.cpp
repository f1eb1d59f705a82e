#include "kernels/moe.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "kernels/dot.h"
#include "kernels/math.h"

namespace tzero {

namespace {
// The k largest of v (largest first, equal values: lower id first) into ids, their values into
// w: k passes, each taking the largest remaining; the strict > keeps the lowest id among equals.
// k is small (2..8), n up to a few hundred.
void top_k(const float* v, size_t n, size_t k, int32_t* ids, float* w) {
  for (size_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (size_t i = 0; i < n; ++i) {
      bool taken = false;
      for (size_t q = 0; q < j; ++q) taken = taken || ids[q] == int32_t(i);
      if (taken) continue;
      if (best < 0 || v[i] > v[size_t(best)]) best = int32_t(i);
    }
    ids[j] = best;
    w[j] = v[size_t(best)];
  }
}
}  // namespace

void moe_route_softmax_weight_ref(const float* logits, size_t n_expert, size_t k, float* probs,
                                  int32_t* ids, float* weights) {
  for (size_t i = 0; i < n_expert; ++i) probs[i] = logits[i];
  top_k(logits, n_expert, k, ids, weights);
  const float m = weights[0];  // the largest
  for (size_t j = 0; j < k; ++j) weights[j] = exp_ref(weights[j] - m);
  const float z = sum_f32_ref(weights, k);
  for (size_t j = 0; j < k; ++j) weights[j] = weights[j] / z;
}

void moe_route_sigmoid_ref(const float* logits, const float* bias, size_t n_expert, size_t k,
                           size_t n_groups, size_t n_groups_used, bool norm, float scale,
                           float* probs, int32_t* ids, float* weights, float* sel,
                           bool softmax_scores) {
  if (softmax_scores) {
    float m = logits[0];
    for (size_t i = 1; i < n_expert; ++i) m = std::max(m, logits[i]);
    for (size_t i = 0; i < n_expert; ++i) probs[i] = exp_ref(logits[i] - m);
    const float z = sum_f32_ref(probs, n_expert);
    for (size_t i = 0; i < n_expert; ++i) probs[i] = probs[i] / z;
  } else {
    for (size_t i = 0; i < n_expert; ++i) probs[i] = sigmoid_ref(logits[i]);
  }
  for (size_t i = 0; i < n_expert; ++i) sel[i] = bias ? probs[i] + bias[i] : probs[i];
  if (n_groups > 1) {
    const size_t P = n_expert / n_groups;
    std::vector<float> score(n_groups);
    for (size_t g = 0; g < n_groups; ++g) {
      int32_t two[2];
      float v[2];
      top_k(sel + g * P, P, P >= 2 ? 2 : 1, two, v);
      score[g] = P >= 2 ? v[0] + v[1] : v[0];
    }
    std::vector<int32_t> keep(n_groups_used);
    std::vector<float> kept(n_groups_used);
    top_k(score.data(), n_groups, n_groups_used, keep.data(), kept.data());
    for (size_t g = 0; g < n_groups; ++g) {
      bool stays = false;
      for (const int32_t x : keep) stays = stays || x == int32_t(g);
      if (!stays)
        for (size_t i = g * P; i < (g + 1) * P; ++i) sel[i] = -INFINITY;
    }
  }
  top_k(sel, n_expert, k, ids, weights);
  for (size_t j = 0; j < k; ++j) weights[j] = probs[size_t(ids[j])];
  if (norm) {
    float s = weights[0];
    for (size_t j = 1; j < k; ++j) s += weights[j];
    s = std::max(s, 6.103515625e-5f);
    for (size_t j = 0; j < k; ++j) weights[j] = weights[j] / s;
  }
  if (scale != 1.0f)
    for (size_t j = 0; j < k; ++j) weights[j] = weights[j] * scale;
}

void moe_route_ref(const float* logits, size_t n_expert, size_t k, bool norm, float* probs,
                   int32_t* ids, float* weights) {
  float m = logits[0];
  for (size_t i = 1; i < n_expert; ++i) m = std::max(m, logits[i]);
  for (size_t i = 0; i < n_expert; ++i) probs[i] = exp_ref(logits[i] - m);
  const float z = sum_f32_ref(probs, n_expert);
  for (size_t i = 0; i < n_expert; ++i) probs[i] = probs[i] / z;
  top_k(probs, n_expert, k, ids, weights);
  if (!norm) return;
  float s = weights[0];
  for (size_t j = 1; j < k; ++j) s += weights[j];
  s = std::max(s, 6.103515625e-5f);
  for (size_t j = 0; j < k; ++j) weights[j] = weights[j] / s;
}

void moe_combine_ref(const float* y, const float* w, size_t k, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = w[0] * y[i];
  for (size_t j = 1; j < k; ++j)
    for (size_t i = 0; i < n; ++i) {
      const float p = w[j] * y[j * n + i];  // rounded, then added (-ffp-contract=off)
      out[i] += p;
    }
}

void moe_combine_arrival(ThreadPool& pool, const float* y, const float* w, size_t n_tok, size_t k,
                         size_t n, float* out) {
  std::fill(out, out + n_tok * n, 0.0f);
  // Units of (token, part of the row, rank), rank fastest: the threads' next claims are
  // different experts of the same elements, so their adds into one output race.
  constexpr size_t kParts = 4;
  const size_t part = (n + kParts - 1) / kParts, n_units = n_tok * kParts * k;
  std::atomic<size_t> next{0};
  pool.run(size_t(pool.size()), [&](size_t, size_t) {
    for (size_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < n_units;) {
      const size_t j = u % k, q = (u / k) % kParts, t = u / (k * kParts);
      const size_t slot = t * k + j, i0 = q * part, i1 = std::min(n, i0 + part);
      const float wj = w[slot];
      const float* ys = y + slot * n;
      float* o = out + t * n;
      for (size_t i = i0; i < i1; ++i)
        std::atomic_ref<float>(o[i]).fetch_add(wj * ys[i], std::memory_order_relaxed);
    }
  });
}

float sigmoid_ref(float x) {
  return 1.0f / (1.0f + exp_ref(-x));
}

}  // namespace tzero
