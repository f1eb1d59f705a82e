// Token choice (src/runtime/sampler.h): argmax ties go to the lowest id, and seeded sampling is
// a pure function of (logits, temperature, seed, step), as DETERMINISM.md requires.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "base/rng.h"
#include "kernels/dot.h"
#include "kernels/math.h"
#include "runtime/sampler.h"

namespace tzero {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

int32_t argmax(const std::vector<float>& l) {
  return argmax_lowest(l.data(), int(l.size()));
}

// Proves: the largest logit wins wherever it is (first, middle, last index), and among equal
// maxima the lowest id wins: all equal, all -inf, ties after a smaller value, +0.0 vs -0.0
// (equal values), a single element.
TEST(Sampler, ArgmaxTiesGoToLowestId) {
  EXPECT_EQ(argmax({5, 1, 2}), 0);
  EXPECT_EQ(argmax({1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax({0, 1, 2, 3}), 3);
  EXPECT_EQ(argmax({2, 2, 2, 2, 2}), 0);
  EXPECT_EQ(argmax({-kInf, -kInf, -kInf}), 0);
  EXPECT_EQ(argmax({-kInf, -kInf, -1e30f}), 2);
  EXPECT_EQ(argmax({-kInf, 4, -kInf, 4}), 1);
  EXPECT_EQ(argmax({-0.0f, 0.0f}), 0);
  EXPECT_EQ(argmax({0.0f, -0.0f}), 0);
  EXPECT_EQ(argmax({kInf, kInf}), 0);
  EXPECT_EQ(argmax({7}), 0);
  // Large vocabulary with the maximum planted at several ids: the first of them wins.
  SplitMix64 rng(3);
  std::vector<float> l(32000);
  for (auto& v : l) v = rng.uniform() * 10.0f;
  for (int id : {31999, 20000, 12345}) l[size_t(id)] = 11.0f;
  EXPECT_EQ(argmax(l), 12345);
  l[31999] = 12.0f;
  EXPECT_EQ(argmax(l), 31999);
}

// Proves: temperature 0 is argmax whatever the seed and step.
TEST(Sampler, TemperatureZeroIsArgmax) {
  const std::vector<float> l = {0.5f, 3.0f, 1.0f, 3.0f};
  for (uint64_t seed : {0ull, 1ull, 99ull}) {
    Sampler s(0.0f, seed);
    for (int step = 0; step < 10; ++step) EXPECT_EQ(s.sample(l.data(), 4, step), 1);
  }
}

std::vector<float> flat_logits(int n) {
  SplitMix64 rng(5);
  std::vector<float> l(static_cast<size_t>(n));
  for (auto& v : l) v = rng.uniform() * 0.1f;  // nearly uniform: every id is a likely pick
  return l;
}

// Proves: a seeded draw depends only on (seed, step): two samplers with the same seed agree at
// every step whichever order the steps are visited in and however often a step is repeated
// (no hidden state carried between calls).
TEST(Sampler, SeededSamplingIsDeterministicInSeedAndStep) {
  const std::vector<float> l = flat_logits(1000);
  Sampler forward(0.8f, 42), backward(0.8f, 42);
  std::vector<int32_t> a(200), b(200);
  for (int step = 0; step < 200; ++step) a[size_t(step)] = forward.sample(l.data(), 1000, step);
  for (int step = 199; step >= 0; --step) b[size_t(step)] = backward.sample(l.data(), 1000, step);
  EXPECT_EQ(a, b);
  for (int step = 0; step < 200; step += 7)
    EXPECT_EQ(forward.sample(l.data(), 1000, step), a[size_t(step)]) << "step " << step;
}

// Proves: the seed and the step both matter: over 50 steps, seeds 1 and 2 give different
// sequences, and within one seed the tokens are not all the same.
TEST(Sampler, DiffersAcrossSeedsAndSteps) {
  const std::vector<float> l = flat_logits(1000);
  Sampler s1(1.0f, 1), s2(1.0f, 2);
  int differ = 0, distinct_steps = 0;
  int32_t first = s1.sample(l.data(), 1000, 0);
  for (int step = 0; step < 50; ++step) {
    const int32_t t1 = s1.sample(l.data(), 1000, step), t2 = s2.sample(l.data(), 1000, step);
    differ += t1 != t2;
    distinct_steps += t1 != first;
  }
  EXPECT_GE(differ, 40) << "seeds 1 and 2 should give different draws at most steps";
  EXPECT_GE(distinct_steps, 40) << "steps should give different draws";
}

// Counts how often each id is drawn over `steps` steps.
std::vector<int> histogram(const std::vector<float>& l, float temperature, uint64_t seed,
                           int steps) {
  Sampler s(temperature, seed);
  std::vector<int> h(l.size());
  for (int step = 0; step < steps; ++step) ++h[size_t(s.sample(l.data(), int(l.size()), step))];
  return h;
}

// Proves: the draws follow the softmax roughly (no chi-square, just windows of about +-5
// standard deviations of the binomial count): a dominant logit (p = e^6 / (e^6 + 3) = 0.993)
// wins at least 950 of 1000 steps; two equal logits share the draws; p = 0.75 vs 0.25 lands
// near 750; temperature sharpens (T = 0.25: p = 3^4 / (3^4 + 1) = 0.988) and flattens (T = 2:
// p = sqrt(3) / (1 + sqrt(3)) = 0.634, far from both 0.75 and 0.5).
TEST(Sampler, FollowsTheDistributionRoughly) {
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    const std::vector<int> dom = histogram({0, 0, 0, 6}, 1.0f, seed, 1000);
    EXPECT_GE(dom[3], 950) << "seed " << seed;
    const std::vector<int> even = histogram({2, 2}, 1.0f, seed, 1000);
    EXPECT_GE(even[0], 400) << "seed " << seed;
    EXPECT_GE(even[1], 400) << "seed " << seed;
    const std::vector<int> odds = histogram({0, std::log(3.0f)}, 1.0f, seed, 1000);
    EXPECT_GE(odds[1], 680) << "seed " << seed;
    EXPECT_LE(odds[1], 820) << "seed " << seed;
    EXPECT_GE(histogram({0, std::log(3.0f)}, 0.25f, seed, 1000)[1], 950) << "seed " << seed;
    const int hot = histogram({0, std::log(3.0f)}, 2.0f, seed, 1000)[1];
    EXPECT_GE(hot, 560) << "seed " << seed;
    EXPECT_LE(hot, 710) << "seed " << seed;
  }
  // A -inf logit is never drawn.
  const std::vector<int> masked = histogram({1, -kInf, 1}, 1.0f, 9, 500);
  EXPECT_EQ(masked[1], 0);
}

int32_t draw(const tzero::SamplingParams& p, const std::vector<float>& l, int step,
             const std::vector<int32_t>& context = {}, size_t n_prompt = 0) {
  Sampler s(p);
  return s.sample(l.data(), int(l.size()), step, context, n_prompt);
}

// Proves: the filters keep what they should: top_k = 1, min_p = 1 and a tiny top_p leave only
// the argmax (over 200 seeded steps on near-uniform logits); top_k = 3 draws only the 3 largest
// and all three of them; with no filter the chain equals sampler-v1 (Sampler(T, seed)).
TEST(Sampler, FiltersKeepTheRightTokens) {
  const std::vector<float> l = flat_logits(500);
  const int32_t best = argmax(l);
  tzero::SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 5;
  for (int step = 0; step < 200; ++step) {
    tzero::SamplingParams k1 = p, m1 = p, p0 = p;
    k1.top_k = 1;
    m1.min_p = 1.0f;
    p0.top_p = 1e-6f;
    EXPECT_EQ(draw(k1, l, step), best);
    EXPECT_EQ(draw(m1, l, step), best);
    EXPECT_EQ(draw(p0, l, step), best);
  }
  std::vector<float> l3 = l;
  l3[10] = 1.0f, l3[20] = 1.0f, l3[30] = 0.9f;  // ties at 1.0 and a close third
  tzero::SamplingParams k3 = p;
  k3.top_k = 3;
  std::set<int32_t> seen;
  for (int step = 0; step < 300; ++step) seen.insert(draw(k3, l3, step));
  EXPECT_EQ(seen, (std::set<int32_t>{10, 20, 30}));
  // sampler-v1, written out: exp_ref((l - max) / T), 16-lane sum, one SplitMix64(seed, step)
  // draw, first id whose running sum exceeds u * z.
  auto v1 = [&](int step) {
    const float max = l[size_t(best)];
    std::vector<float> e(l.size());
    for (size_t i = 0; i < l.size(); ++i) e[i] = exp_ref((l[i] - max) / 1.0f);
    const float z = sum_f32_ref(e.data(), e.size());
    SplitMix64 rng(5 ^ (uint64_t(step) * 0xd1b54a32d192ed03ull));
    rng.next();
    const float target = rng.uniform() * z;
    float running = 0;
    for (size_t i = 0; i < e.size(); ++i)
      if ((running += e[i]) > target) return int32_t(i);
    return best;
  };
  for (int step = 0; step < 100; ++step) EXPECT_EQ(draw(p, l, step), v1(step)) << step;
}

// Proves: the penalties move the greedy choice the documented way: repetition divides a
// positive logit of a recent token (prompt included), frequency and presence subtract for
// output tokens only.
TEST(Sampler, PenaltiesChangeTheChoice) {
  const std::vector<float> l = {1.0f, 2.0f, 1.9f, 0.5f};
  tzero::SamplingParams p;  // greedy
  EXPECT_EQ(draw(p, l, 0, {1}, 1), 1);
  p.repetition_penalty = 1.1f;  // 2.0 / 1.1 = 1.82 < 1.9
  EXPECT_EQ(draw(p, l, 0, {1}, 1), 2);
  p.penalty_last_n = 1;  // token 1 is outside the last 1 token
  EXPECT_EQ(draw(p, l, 0, {1, 3}, 2), 1);
  tzero::SamplingParams f;
  f.frequency_penalty = 0.06f;  // 2 - 2 * 0.06 = 1.88 < 1.9
  EXPECT_EQ(draw(f, l, 0, {1, 1}, 0), 2);
  EXPECT_EQ(draw(f, l, 0, {1, 1}, 2), 1);  // prompt tokens do not count
  tzero::SamplingParams pr;
  pr.presence_penalty = 0.2f;
  EXPECT_EQ(draw(pr, l, 0, {1}, 0), 2);
}

// Proves: logprobs are a normalized log-softmax (exp sums to 1 within float rounding), the top
// list is sorted with ties to the lower id, and the chosen token's value is its own entry.
TEST(Sampler, LogprobsAreNormalizedAndSorted) {
  const std::vector<float> l = {0.5f, 3.0f, 3.0f, -1.0f, 2.0f};
  const Logprobs lp(l.data(), int(l.size()));
  double total = 0;
  for (int i = 0; i < 5; ++i) total += std::exp(double(lp.of(i)));
  EXPECT_NEAR(total, 1.0, 1e-6);
  const auto top = lp.top(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);
  EXPECT_EQ(top[1].first, 2);
  EXPECT_EQ(top[2].first, 4);
  EXPECT_EQ(top[0].second, lp.of(1));
  EXPECT_NEAR(lp.of(4) - lp.of(0), 1.5, 1e-6);
}

}  // namespace
}  // namespace tzero
