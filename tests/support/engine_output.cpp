// support/engine_output.h
#include "support/engine_output.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tzero::test {

tzero::TokenCallback collect(EngineOutput& o) {
  return [&o](const tzero::TokenEvent& e) {
    o.text += e.text;
    if (e.finished) {
      o.reason = tzero::to_string(e.finish_reason);
      o.digest = e.logits_digest;
      o.n_cached = e.n_cached;
      o.n_preempted = e.n_preempted;
      o.n_drafted = e.n_drafted;
      o.n_accepted = e.n_accepted;
      ++o.n_final;
      return;
    }
    o.tokens.push_back(e.token);
    o.logprobs.push_back(e.logprob);
    o.top.push_back(e.top);
  };
}

void expect_same(const EngineOutput& solo, const EngineOutput& got, const std::string& what) {
  EXPECT_EQ(got.n_final, 1) << what;
  EXPECT_EQ(solo.tokens, got.tokens) << what;
  EXPECT_EQ(solo.digest, got.digest) << what;
  EXPECT_EQ(solo.text, got.text) << what;
  EXPECT_EQ(solo.reason, got.reason) << what;
  ASSERT_EQ(solo.logprobs.size(), got.logprobs.size()) << what;
  EXPECT_EQ(
      std::memcmp(solo.logprobs.data(), got.logprobs.data(), solo.logprobs.size() * sizeof(float)),
      0)
      << what << ": logprobs differ";
  for (size_t i = 0; i < solo.top.size() && i < got.top.size(); ++i) {
    ASSERT_EQ(solo.top[i].size(), got.top[i].size()) << what;
    for (size_t j = 0; j < solo.top[i].size(); ++j) {
      EXPECT_EQ(solo.top[i][j].token, got.top[i][j].token) << what;
      EXPECT_EQ(std::memcmp(&solo.top[i][j].logprob, &got.top[i][j].logprob, 4), 0) << what;
    }
  }
}

}  // namespace tzero::test
