#include "probe/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

namespace tzero::probe {

namespace {
uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

bool same_token(const SampledToken& a, const SampledToken& b) {
  if (a.text != b.text || !same_number(a.logprob, b.logprob) || a.top.size() != b.top.size())
    return false;
  for (size_t i = 0; i < a.top.size(); ++i)
    if (a.top[i].token != b.top[i].token || !same_number(a.top[i].logprob, b.top[i].logprob))
      return false;
  return true;
}

double diff(const ExactNumber& a, const ExactNumber& b) {
  const double d = std::fabs(a.value - b.value);
  return std::isnan(d) ? 0 : d;
}

// The largest logprob difference at one position: the sampled tokens', and the alternatives
// both lists have.
double position_diff(const SampledToken& a, const SampledToken& b) {
  double m = diff(a.logprob, b.logprob);
  for (const auto& x : a.top)
    for (const auto& y : b.top)
      if (x.token == y.token) m = std::max(m, diff(x.logprob, y.logprob));
  return m;
}

std::string number_key(const ExactNumber& n) {
  return std::to_string(bits(n.value)) + "/" + n.text;
}
}  // namespace

bool same_number(const ExactNumber& a, const ExactNumber& b) {
  if (bits(a.value) != bits(b.value)) return false;
  return a.text.empty() || b.text.empty() || a.text == b.text;
}

Comparison compare_runs(const Completion& ref, const Completion& other, bool use_logprobs) {
  Comparison c;
  c.text_differs = ref.text != other.text;
  if (!use_logprobs) {
    if (!c.text_differs) return c;
    c.identical = false;
    const size_t n = std::min(ref.text.size(), other.text.size());
    size_t i = 0;
    while (i < n && ref.text[i] == other.text[i]) ++i;
    c.first_divergence = i;
    return c;
  }
  const auto& a = ref.tokens;
  const auto& b = other.tokens;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (!c.first_divergence && !same_token(a[i], b[i])) c.first_divergence = i;
    if (c.first_divergence)
      c.max_logprob_diff = std::max(c.max_logprob_diff, position_diff(a[i], b[i]));
    if (a[i].text != b[i].text) {
      c.first_token_change = i;
      break;
    }
  }
  if (!c.first_divergence && (a.size() != b.size() || c.text_differs)) c.first_divergence = n;
  if (!c.first_token_change && a.size() != b.size()) c.first_token_change = n;
  c.identical = !c.first_divergence;
  return c;
}

std::string output_key(const Completion& c, bool use_logprobs) {
  std::string k = std::to_string(c.text.size()) + ":" + c.text;
  if (!use_logprobs) return k;
  for (const auto& t : c.tokens) {
    k += "|" + std::to_string(t.text.size()) + ":" + t.text + "=" + number_key(t.logprob) + "[";
    for (const auto& a : t.top)
      k += std::to_string(a.token.size()) + ":" + a.token + "=" + number_key(a.logprob) + ",";
    k += "]";
  }
  return k;
}

RunsSummary summarize_runs(const std::vector<Completion>& runs, bool use_logprobs) {
  RunsSummary s;
  if (runs.empty()) return s;
  std::set<std::string> keys;
  for (const auto& r : runs) {
    keys.insert(output_key(r, use_logprobs));
    Comparison c = compare_runs(runs[0], r, use_logprobs);
    if (!c.identical) {
      s.identical = false;
      ++s.diverged_runs;
      if (c.first_divergence && (!s.first_divergence || *c.first_divergence < *s.first_divergence))
        s.first_divergence = c.first_divergence;
      s.max_logprob_diff = std::max(s.max_logprob_diff, c.max_logprob_diff);
    }
    s.per_run.push_back(c);
  }
  s.unique_outputs = int(keys.size());
  return s;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * double(values.size()));
  const size_t i = size_t(std::clamp(rank, 1.0, double(values.size()))) - 1;
  return values[i];
}

}  // namespace tzero::probe
