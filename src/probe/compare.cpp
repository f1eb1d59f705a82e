#include "probe/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

namespace {
std::string number_text(const ExactNumber& n) {
  if (!n.text.empty()) return n.text;
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", n.value);
  return b;
}

// The first field that differs at one position, or nullopt when the tokens are the same.
std::optional<TokenDifference> position_difference(const SampledToken& a, const SampledToken& b) {
  TokenDifference d;
  d.ref_token = a.text;
  d.other_token = b.text;
  auto numbers = [&](std::string field, const ExactNumber& x, const ExactNumber& y) {
    d.field = std::move(field);
    d.ref_text = number_text(x);
    d.other_text = number_text(y);
    d.ref_value = x.value;
    d.other_value = y.value;
    return d;
  };
  if (a.text != b.text) {
    d.field = "token";
    d.ref_text = a.text;
    d.other_text = b.text;
    return d;
  }
  if (!same_number(a.logprob, b.logprob)) return numbers("logprob", a.logprob, b.logprob);
  const size_t n = std::min(a.top.size(), b.top.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string alt = "alternative " + std::to_string(i + 1);
    if (a.top[i].token != b.top[i].token) {
      d.field = alt + " token";
      d.ref_text = a.top[i].token;
      d.other_text = b.top[i].token;
      return d;
    }
    if (!same_number(a.top[i].logprob, b.top[i].logprob))
      return numbers(alt + " logprob", a.top[i].logprob, b.top[i].logprob);
  }
  if (a.top.size() != b.top.size()) {
    d.field = "alternatives";
    d.ref_text = std::to_string(a.top.size());
    d.other_text = std::to_string(b.top.size());
    return d;
  }
  return std::nullopt;
}
}  // namespace

std::string double_bits(double v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(bits(v)));
  return b;
}

TokenDifferences token_differences(const Completion& ref, const Completion& other, size_t max) {
  TokenDifferences out;
  out.ref_tokens = ref.tokens.size();
  out.other_tokens = other.tokens.size();
  const size_t n = std::min(ref.tokens.size(), other.tokens.size());
  for (size_t i = 0; i < n; ++i) {
    auto d = position_difference(ref.tokens[i], other.tokens[i]);
    if (!d) continue;
    ++out.positions;
    d->position = i;
    const bool cut = d->field == "token";
    if (out.first.size() < max) out.first.push_back(std::move(*d));
    if (cut) break;
  }
  return out;
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
