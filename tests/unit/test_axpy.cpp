// The AXPY case (src/demo/axpy.h): the two deterministic versions give one result across runs
// and thread counts, and the turn lock equals the sequential sum in input order bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "demo/axpy.h"

namespace {
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}
}  // namespace

TEST(Axpy, TurnLockEqualsSequentialSumForAnyThreadCount) {
  const auto p = tzero::make_axpy_problem(37, 1000, 7);
  const auto seq = tzero::axpy_sequential(p);
  for (int threads : {1, 2, 3, 4, 7, 16})
    for (int run = 0; run < 10; ++run)
      ASSERT_TRUE(same_bits(tzero::axpy_accumulate(p, tzero::AxpyVersion::TurnLock, threads), seq))
          << threads << " threads, run " << run;
}

TEST(Axpy, TreeReduceIsStableAcrossRunsAndThreadCounts) {
  const auto p = tzero::make_axpy_problem(37, 1000, 7);
  const auto first = tzero::axpy_accumulate(p, tzero::AxpyVersion::TreeReduce, 1);
  for (int threads : {1, 2, 3, 4, 7, 16})
    for (int run = 0; run < 10; ++run)
      ASSERT_TRUE(
          same_bits(tzero::axpy_accumulate(p, tzero::AxpyVersion::TreeReduce, threads), first))
          << threads << " threads, run " << run;
  // The tree is a different order than the sequential sum: on this data some element differs,
  // which proves the comparison above is about order and not trivially equal values.
  EXPECT_FALSE(same_bits(first, tzero::axpy_sequential(p)));
  // Every version computes the same sum up to rounding.
  const auto seq = tzero::axpy_sequential(p);
  for (size_t k = 0; k < seq.size(); ++k) EXPECT_NEAR(first[k], seq[k], 1e-2f);
}

TEST(Axpy, SpinLockSumIsCorrectUpToRounding) {
  const auto p = tzero::make_axpy_problem(16, 256, 3);
  const auto seq = tzero::axpy_sequential(p);
  const auto y = tzero::axpy_accumulate(p, tzero::AxpyVersion::SpinLock, 4);
  for (size_t k = 0; k < seq.size(); ++k) EXPECT_NEAR(y[k], seq[k], 1e-2f);
}
