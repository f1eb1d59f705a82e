// The probe's comparison of runs (src/probe/compare.h): exact numbers, first divergence,
// largest logprob difference, distinct outputs, percentiles.
#include <gtest/gtest.h>

#include <cmath>

#include "probe/compare.h"

namespace {
using namespace tzero::probe;

ExactNumber num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return {v, b};
}

// A run with these tokens (logprobs -0.1 * (i + 1), two alternatives each).
Completion run(const std::vector<std::string>& tokens) {
  Completion c;
  c.has_logprobs = true;
  for (size_t i = 0; i < tokens.size(); ++i) {
    SampledToken t;
    t.text = tokens[i];
    t.logprob = num(-0.1 * double(i + 1));
    t.top = {{tokens[i], t.logprob}, {"alt", num(-3.0 - double(i))}};
    c.tokens.push_back(t);
    c.text += tokens[i];
  }
  return c;
}

void set_logprob(Completion& c, size_t i, double v) {
  c.tokens[i].logprob = num(v);
  c.tokens[i].top[0].logprob = num(v);
}
}  // namespace

TEST(ProbeCompare, SameNumberMeansSameBitsAndText) {
  EXPECT_TRUE(same_number({0.5, "0.5"}, {0.5, "0.5"}));
  EXPECT_FALSE(same_number({0.5, "0.5"}, {std::nextafter(0.5, 1.0), "0.5000000000000001"}));
  EXPECT_FALSE(same_number({0.5, "0.5"}, {0.5, "0.50"})) << "same value, different text";
  EXPECT_FALSE(same_number({0.0, "0"}, {-0.0, "-0"})) << "signed zeros differ in bits";
  EXPECT_TRUE(same_number({0.25, ""}, {0.25, "0.25"})) << "an unknown text matches";
}

TEST(ProbeCompare, IdenticalRuns) {
  const Completion a = run({"a", "b", "c"});
  const Comparison c = compare_runs(a, a, true);
  EXPECT_TRUE(c.identical);
  EXPECT_FALSE(c.first_divergence);
  EXPECT_EQ(c.max_logprob_diff, 0.0);
}

TEST(ProbeCompare, OneUlpIsADivergence) {
  const Completion a = run({"a", "b", "c", "d"});
  Completion b = a;
  const double v = a.tokens[2].logprob.value;
  set_logprob(b, 2, std::nextafter(v, 0.0));
  const Comparison c = compare_runs(a, b, true);
  EXPECT_FALSE(c.identical);
  ASSERT_TRUE(c.first_divergence);
  EXPECT_EQ(*c.first_divergence, 2u);
  EXPECT_FALSE(c.first_token_change) << "the tokens are the same";
  EXPECT_EQ(c.max_logprob_diff, std::fabs(std::nextafter(v, 0.0) - v));
  EXPECT_GT(c.max_logprob_diff, 0.0);
  EXPECT_FALSE(compare_runs(a, b, false).first_divergence) << "the texts are equal";
}

TEST(ProbeCompare, AlternativesCount) {
  const Completion a = run({"a", "b", "c"});
  Completion b = a;
  b.tokens[1].top[1].logprob = num(-3.5);
  Comparison c = compare_runs(a, b, true);
  ASSERT_TRUE(c.first_divergence);
  EXPECT_EQ(*c.first_divergence, 1u);
  EXPECT_DOUBLE_EQ(c.max_logprob_diff, 0.5);
  b = a;
  std::swap(b.tokens[1].top[0], b.tokens[1].top[1]);  // the order is part of the output
  c = compare_runs(a, b, true);
  EXPECT_FALSE(c.identical);
  EXPECT_EQ(c.max_logprob_diff, 0.0) << "same numbers, matched by token";
}

TEST(ProbeCompare, DiffStopsWhereTheTokensDiffer) {
  const Completion a = run({"a", "b", "c", "d", "e"});
  Completion b = run({"a", "b", "X", "d", "e"});
  set_logprob(b, 1, -0.2 - 1e-9);
  set_logprob(b, 2, -0.3 - 0.125);
  set_logprob(b, 4, -100.0);  // after the token change: not comparable, not counted
  const Comparison c = compare_runs(a, b, true);
  ASSERT_TRUE(c.first_divergence && c.first_token_change);
  EXPECT_EQ(*c.first_divergence, 1u);
  EXPECT_EQ(*c.first_token_change, 2u);
  EXPECT_NEAR(c.max_logprob_diff, 0.125, 1e-12);
  const Comparison t = compare_runs(a, b, false);
  ASSERT_TRUE(t.first_divergence);
  EXPECT_EQ(*t.first_divergence, 2u) << "the byte offset of X";
}

TEST(ProbeCompare, PrefixAndLength) {
  const Completion a = run({"a", "b", "c"});
  const Completion b = run({"a", "b"});
  Comparison c = compare_runs(a, b, true);
  ASSERT_TRUE(c.first_divergence);
  EXPECT_EQ(*c.first_divergence, 2u);
  c = compare_runs(b, a, false);
  ASSERT_TRUE(c.first_divergence);
  EXPECT_EQ(*c.first_divergence, 2u);
}

TEST(ProbeCompare, SummaryCountsDistinctOutputs) {
  const Completion a = run({"a", "b", "c", "d"});
  Completion ulp = a;
  set_logprob(ulp, 3, std::nextafter(a.tokens[3].logprob.value, -1.0));
  Completion changed = run({"a", "Z", "c", "d"});
  const RunsSummary s = summarize_runs({a, a, ulp, ulp, a, changed}, true);
  EXPECT_FALSE(s.identical);
  EXPECT_EQ(s.unique_outputs, 3);
  EXPECT_EQ(s.diverged_runs, 3);
  ASSERT_TRUE(s.first_divergence);
  EXPECT_EQ(*s.first_divergence, 1u);
  ASSERT_EQ(s.per_run.size(), 6u);
  EXPECT_TRUE(s.per_run[1].identical);
  EXPECT_EQ(*s.per_run[2].first_divergence, 3u);
  // Text only, the one-ulp runs are the same output.
  const RunsSummary t = summarize_runs({a, a, ulp, ulp, a, changed}, false);
  EXPECT_EQ(t.unique_outputs, 2);
  EXPECT_EQ(t.diverged_runs, 1);
  EXPECT_EQ(t.max_logprob_diff, 0.0);
  EXPECT_EQ(summarize_runs({a, a}, true).unique_outputs, 1);
  EXPECT_TRUE(summarize_runs({a}, true).identical);
  EXPECT_EQ(summarize_runs({}, true).unique_outputs, 0);
}

TEST(ProbeCompare, OutputKeyIsUnambiguous) {
  Completion a = run({"ab", "c"});
  Completion b = run({"a", "bc"});
  b.tokens[0].logprob = a.tokens[0].logprob;
  b.tokens[1].logprob = a.tokens[1].logprob;
  EXPECT_NE(output_key(a, true), output_key(b, true));
  EXPECT_EQ(output_key(a, false), output_key(b, false)) << "same text";
}

TEST(ProbeCompare, Percentiles) {
  EXPECT_EQ(percentile({}, 50), 0.0);
  EXPECT_EQ(percentile({7}, 99), 7.0);
  EXPECT_EQ(percentile({3, 1, 2}, 50), 2.0);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 50), 2.0);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(percentile(v, 99), 99.0);
  EXPECT_EQ(percentile(v, 100), 100.0);
  EXPECT_EQ(percentile(v, 0), 1.0);
}

// Proves: token_differences names each differing position's first differing field with both
// values as written, stops at the first changed token, and counts past its limit.
TEST(ProbeCompare, TokenDifferencesNameThePositionAndBothValues) {
  const Completion a = run({"a", "b", "c", "d", "e"});
  Completion b = a;
  set_logprob(b, 1, std::nextafter(-0.2, 0.0));
  b.tokens[2].top[1].logprob = num(-5.5);
  b.tokens[3].text = "X";
  b.tokens[4].logprob = num(-9.0);  // after the changed token: not listed
  const TokenDifferences d = token_differences(a, b, 2);
  EXPECT_EQ(d.positions, 3u);
  ASSERT_EQ(d.first.size(), 2u);
  EXPECT_EQ(d.first[0].position, 1u);
  EXPECT_EQ(d.first[0].field, "logprob");
  EXPECT_EQ(d.first[0].ref_token, "b");
  EXPECT_EQ(d.first[0].ref_text, "-0.20000000000000001");
  EXPECT_EQ(d.first[0].other_text, "-0.19999999999999998");
  EXPECT_EQ(double_bits(*d.first[0].ref_value), "0xbfc999999999999a");
  EXPECT_EQ(double_bits(*d.first[0].other_value), "0xbfc9999999999999");
  EXPECT_EQ(d.first[1].position, 2u);
  EXPECT_EQ(d.first[1].field, "alternative 2 logprob");
  EXPECT_EQ(d.first[1].ref_text, "-5");
  EXPECT_EQ(d.first[1].other_text, "-5.5");
  const TokenDifferences all = token_differences(a, b, 10);
  ASSERT_EQ(all.first.size(), 3u);
  EXPECT_EQ(all.first[2].field, "token");
  EXPECT_EQ(all.first[2].ref_text, "d");
  EXPECT_EQ(all.first[2].other_text, "X");
  EXPECT_FALSE(all.first[2].ref_value.has_value());
  EXPECT_EQ(token_differences(a, a, 10).positions, 0u);
}
