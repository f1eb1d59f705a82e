// Stop strings over streamed text (src/runtime/stop_matcher.h).
#include <gtest/gtest.h>

#include "runtime/stop_matcher.h"

namespace tzero {
namespace {

std::string feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.finish();
}

// Proves: text before a stop string is released, the stop string and everything after it are
// not, even when the stop string arrives split across pieces; text that only looked like a
// stop string's start is released once it cannot be one.
TEST(StopMatcher, CutsAtTheFirstStopAcrossPieces) {
  StopMatcher a({"END"});
  EXPECT_EQ(feed(a, {"hello E", "N", "D world"}), "hello ");
  EXPECT_TRUE(a.stopped());
  StopMatcher b({"END"});
  EXPECT_EQ(b.push("hello E"), "hello ");  // "E" held back
  EXPECT_EQ(b.push("X"), "EX");
  EXPECT_EQ(b.finish(), "");
  EXPECT_FALSE(b.stopped());
  StopMatcher c({"\n\n", "##"});
  EXPECT_EQ(feed(c, {"a#b", "\n", "c#", "#d"}), "a#b\nc");
  StopMatcher none({});
  EXPECT_EQ(feed(none, {"x", "y"}), "xy");
  StopMatcher tail({"abc"});
  EXPECT_EQ(feed(tail, {"xxab"}), "xxab");  // ended without the stop: held text flushed
}

// Proves: the earliest stop string in the text wins, whichever is listed first.
TEST(StopMatcher, EarliestStopWins) {
  StopMatcher m({"world", "lo"});
  EXPECT_EQ(feed(m, {"hello world"}), "hel");
}

}  // namespace
}  // namespace tzero
