// tzero bench's output contract (numbers are checked for presence and sign, never for speed:
// speed goals live in docs/BENCHMARKS.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

using nlohmann::json;

// Proves: --json prints the documented fields for prefill and decode, and -p 0 skips prefill.
TEST(BenchCli, JsonHasPrefillAndDecodeRates) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  auto r =
      tzero::test::run_tzero({"bench", "-m", model, "-p", "8", "-n", "4", "-r", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["tg_tokens_per_s"].get<double>(), 0);
  r = tzero::test::run_tzero({"bench", "-m", model, "-p", "0", "-n", "4", "-r", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(r.out);
  EXPECT_TRUE(j["pp_tokens_per_s"].is_null());
}

// Proves: --concurrency runs the batched engine once per value and reports each aggregate
// generation rate.
TEST(BenchCli, ConcurrencyReportsEachLevel) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const auto r = tzero::test::run_tzero(
      {"bench", "-m", model, "-p", "4", "-n", "6", "-r", "1", "-c", "1", "-c", "4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["concurrency"].size(), 2u);
  EXPECT_EQ(j["concurrency"][0]["concurrency"], 1);
  EXPECT_EQ(j["concurrency"][1]["concurrency"], 4);
  for (const auto& row : j["concurrency"]) EXPECT_GT(row["tg_tokens_per_s"].get<double>(), 0);
}
