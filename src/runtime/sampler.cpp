#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/rng.h"
#include "kernels/dot.h"
#include "kernels/math.h"

namespace tzero {

int32_t argmax_lowest(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;  // strict: ties keep the lowest id
  return best;
}

namespace {

bool has_penalties(const tzero::SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
}

// Applies the penalties to l (a copy of the logits). Each token's change depends only on its
// own counts, so the order over tokens does not matter.
void apply_penalties(const tzero::SamplingParams& p, const std::vector<int32_t>& context,
                     size_t n_prompt, float* l, int n) {
  if (p.repetition_penalty != 1.0f && p.penalty_last_n != 0) {
    const size_t last =
        p.penalty_last_n < 0 ? context.size() : std::min(context.size(), size_t(p.penalty_last_n));
    std::vector<int32_t> seen(context.end() - std::ptrdiff_t(last), context.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= n) continue;
      l[t] = l[t] > 0 ? l[t] / p.repetition_penalty : l[t] * p.repetition_penalty;
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    std::map<int32_t, int> count;
    for (size_t i = std::min(n_prompt, context.size()); i < context.size(); ++i)
      ++count[context[i]];
    for (const auto& [t, c] : count) {
      if (t < 0 || t >= n) continue;
      l[t] -= float(c) * p.frequency_penalty + p.presence_penalty;
    }
  }
}

}  // namespace

int32_t Sampler::sample(const float* logits, int n, int step, const std::vector<int32_t>& context,
                        size_t n_prompt) {
  const tzero::SamplingParams& p = params_;
  const float* l = logits;
  if (has_penalties(p)) {
    work_.assign(logits, logits + n);
    apply_penalties(p, context, n_prompt, work_.data(), n);
    l = work_.data();
  }
  if (p.temperature <= 0) return argmax_lowest(l, n);
  const float max = l[argmax_lowest(l, n)];
  probs_.resize(size_t(n));
  for (int i = 0; i < n; ++i) probs_[size_t(i)] = exp_ref((l[i] - max) / p.temperature);

  const bool top_k = p.top_k > 0 && p.top_k < n;
  const bool filtered = top_k || p.top_p < 1.0f || p.min_p > 0.0f;
  if (filtered) {
    // Kept ids by decreasing p (equivalently logit), ties to the lower id.
    ids_.resize(size_t(n));
    for (int i = 0; i < n; ++i) ids_[size_t(i)] = i;
    auto better = [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
    size_t kept = size_t(n);
    if (top_k) {
      std::partial_sort(ids_.begin(), ids_.begin() + p.top_k, ids_.end(), better);
      kept = size_t(p.top_k);
    } else {
      std::sort(ids_.begin(), ids_.end(), better);
    }
    if (p.min_p > 0.0f) {  // p of the top token is exp_ref(0) = 1
      size_t k = 1;
      while (k < kept && probs_[size_t(ids_[k])] >= p.min_p) ++k;
      kept = k;
    }
    if (p.top_p < 1.0f) {
      if (top_k) std::sort(ids_.begin(), ids_.begin() + std::ptrdiff_t(kept), better);
      float total = 0;
      for (size_t k = 0; k < kept; ++k) total += probs_[size_t(ids_[k])];
      float cum = 0;
      size_t k = 0;
      while (k < kept) {
        cum += probs_[size_t(ids_[k++])];
        if (cum >= p.top_p * total) break;
      }
      kept = k;
    }
    // Zero what was cut; the draw below then runs over the kept ids in id order.
    std::vector<char> keep(size_t(n), 0);
    for (size_t k = 0; k < kept; ++k) keep[size_t(ids_[k])] = 1;
    for (int i = 0; i < n; ++i)
      if (!keep[size_t(i)]) probs_[size_t(i)] = 0.0f;
  }
  const float z = sum_f32_ref(probs_.data(), size_t(n));
  SplitMix64 rng(p.seed ^ (uint64_t(step) * 0xd1b54a32d192ed03ull));
  rng.next();
  const float target = rng.uniform() * z;
  float running = 0;
  for (int i = 0; i < n; ++i) {
    running += probs_[size_t(i)];
    if (running > target && probs_[size_t(i)] > 0.0f) return i;
  }
  return argmax_lowest(l, n);  // rounding left the target past the end: the mode
}

Logprobs::Logprobs(const float* logits, int n) : logits_(logits), n_(n) {
  m_ = logits[argmax_lowest(logits, n)];
  std::vector<float> e(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) e[size_t(i)] = exp_ref(logits[i] - m_);
  log_z_ = float(std::log(double(sum_f32_ref(e.data(), size_t(n)))));
}

std::vector<std::pair<int32_t, float>> Logprobs::top(int top_n) const {
  top_n = std::min(top_n, n_);
  std::vector<int32_t> ids(static_cast<size_t>(n_));
  for (int i = 0; i < n_; ++i) ids[size_t(i)] = i;
  std::partial_sort(ids.begin(), ids.begin() + top_n, ids.end(), [&](int32_t a, int32_t b) {
    return logits_[a] > logits_[b] || (logits_[a] == logits_[b] && a < b);
  });
  std::vector<std::pair<int32_t, float>> out;
  for (int k = 0; k < top_n; ++k) out.emplace_back(ids[size_t(k)], of(ids[size_t(k)]));
  return out;
}

}  // namespace tzero
