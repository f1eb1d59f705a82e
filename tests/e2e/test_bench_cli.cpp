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

// Proves: a decode test reports the machine's streaming-read rate of the same run and the
// decode's weight-read rate as a fraction of it (the roofline of docs/BENCHMARKS.md); the text
// output says it; --stream-mib 0 and -n 0 leave the fields out.
TEST(BenchCli, DecodeReportsItsFractionOfTheStreamingRead) {
  const std::string model = tzero::test::generated_model("tiny", "q4_0");
  auto r = tzero::test::run_tzero(
      {"bench", "-m", model, "-p", "0", "-n", "4", "-r", "1", "--stream-mib", "64", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  const double stream = j["stream_read_gb_per_s"].get<double>();
  EXPECT_GT(stream, 0);
  EXPECT_GE(stream, j["stream_read_median_gb_per_s"].get<double>());
  EXPECT_EQ(j["tg_roofline_fraction"].get<double>(),
            j["tg_weight_gb_per_s"].get<double>() / stream);
  const std::string loads = j["stream_read_loads"].get<std::string>();
  EXPECT_TRUE(loads == "avx512" || loads == "avx2" || loads == "u64") << loads;

  r = tzero::test::run_tzero(
      {"bench", "-m", model, "-p", "0", "-n", "4", "-r", "1", "--stream-mib", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("% of the "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" GB/s streaming read"), std::string::npos) << r.out;

  for (const char* n_gen_and_mib : {"4 0", "0 64"}) {
    const std::string n_gen(n_gen_and_mib, 1), mib(n_gen_and_mib + 2);
    r = tzero::test::run_tzero(
        {"bench", "-m", model, "-p", "2", "-n", n_gen, "-r", "1", "--stream-mib", mib, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    j = json::parse(r.out);
    EXPECT_FALSE(j.contains("stream_read_gb_per_s")) << n_gen_and_mib;
    EXPECT_FALSE(j.contains("tg_roofline_fraction")) << n_gen_and_mib;
  }
}
