// The prefix cache's snapshots of recurrent states (batch/state_snapshots.h): found only by the
// exact tokens, after the pass that wrote them committed; a failed pass's reservations are
// dropped; recycled least recently used first, never while pending.
#include <gtest/gtest.h>

#include <vector>

#include "batch/state_snapshots.h"

namespace tzero {
namespace {

TEST(StateSnapshots, FoundByExactTokensAfterCommitOnly) {
  StateSnapshots s(4, 2);  // slots 4 and 5
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8};
  const int slot = s.reserve(a, 4);
  EXPECT_GE(slot, 4);
  EXPECT_LE(slot, 5);
  EXPECT_EQ(s.find(a, 4), -1);  // pending: the pass has not written it yet
  s.commit();
  EXPECT_EQ(s.find(a, 4), slot);
  EXPECT_EQ(s.find(a, 8), -1);  // another prefix length
  std::vector<int32_t> b = a;
  b[2] = 9;
  EXPECT_EQ(s.find(b, 4), -1);  // other tokens
  EXPECT_EQ(s.n_valid(), 1);
}

TEST(StateSnapshots, AFailedPassLeavesNothingFindable) {
  StateSnapshots s(0, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4};
  s.reserve(a, 4);
  s.abort();
  s.commit();  // a later pass commits only its own reservations
  EXPECT_EQ(s.find(a, 4), -1);
  EXPECT_EQ(s.n_valid(), 0);
}

TEST(StateSnapshots, RecyclesTheLeastRecentlyUsedAndNeverAPendingOne) {
  StateSnapshots s(0, 2);
  const std::vector<int32_t> a = {1, 1, 1, 1}, b = {2, 2, 2, 2}, c = {3, 3, 3, 3};
  const int sa = s.reserve(a, 4);
  const int sb = s.reserve(b, 4);
  EXPECT_NE(sa, sb);
  EXPECT_EQ(s.reserve(c, 4), -1);  // both pending
  s.commit();
  EXPECT_EQ(s.find(a, 4), sa);  // a is now the more recently used
  EXPECT_EQ(s.reserve(c, 4), sb);
  s.commit();
  EXPECT_EQ(s.find(b, 4), -1);
  EXPECT_EQ(s.find(a, 4), sa);
  EXPECT_EQ(s.find(c, 4), sb);
}

}  // namespace
}  // namespace tzero
