// tzero audit: every deterministic configuration identical on a real and a generated model; a
// broken configuration (one flipped bit) is caught, named, and fails the audit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

using nlohmann::json;

TEST(Audit, ContractHoldsAndReportIsWritten) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string dir = tzero::test::scratch_dir() + "/audit";
  const auto r = tzero::test::run_tzero({"audit", "-m", model, "-n", "6", "--report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("contract holds"), std::string::npos);
  EXPECT_NE(r.err.find("[1/"), std::string::npos) << "progress is shown";
  const json j = json::parse(tzero::test::read_file(dir + "/report.json"));
  EXPECT_EQ(j["deterministic_failures"], 0);
  EXPECT_GE(j["configs"].size(), 8u);
  for (const auto& o : j["outcomes"]) {
    if (o["config"].get<std::string>().rfind("fast", 0) != 0) {
      EXPECT_TRUE(o["identical"].get<bool>()) << o["config"];
    }
  }
  // The batched engine's dimensions are in the matrix and were really exercised: the warm
  // prefix cache served prompt tokens, the tiny pool preempted the audited request.
  int batch_configs = 0, cached = 0, preempted = 0;
  for (const auto& c : j["configs"]) batch_configs += c["group"] == "batch";
  for (const auto& o : j["outcomes"]) {
    cached += o.value("cached_tokens", 0);
    preempted += o.value("preempted", 0);
  }
  EXPECT_GE(batch_configs, 6);
  // Speculative decoding's rows: prompt lookup and the model as its own draft, alone and in the
  // engine, identical like every deterministic row (checked above).
  int draft_configs = 0;
  for (const auto& c : j["configs"]) draft_configs += c["group"] == "draft";
  EXPECT_EQ(draft_configs, 2);
  EXPECT_GT(cached, 0);
  EXPECT_GT(preempted, 0);
  // A value is measured, or null with its reason: batched rows time their request's decode,
  // have no prefill of their own, and a deviation only where the digests say 0.
  for (const auto& o : j["outcomes"]) {
    for (const char* k : {"max_logit_deviation", "pp_tokens_per_s", "tg_tokens_per_s"})
      EXPECT_EQ(o[k].is_null(), o.contains("not_measured") && o["not_measured"].contains(k))
          << o["config"] << " " << k;
    const std::string name = o["config"];
    if (name.rfind("batch:", 0) == 0) {
      EXPECT_GT(o["tg_tokens_per_s"].get<double>(), 0.0) << name;
      EXPECT_NE(o["not_measured"]["pp_tokens_per_s"].get<std::string>().find("mates"),
                std::string::npos);
      EXPECT_EQ(o["max_logit_deviation"], 0.0) << name << ": identical digests";
    }
  }
  ASSERT_EQ(j["throughput"]["configs"].size(), j["configs"].size());
  for (const auto& t : j["throughput"]["configs"]) {
    EXPECT_GE(t["runs"].get<int>(), 3) << t["config"];
    const auto& d = t["decode_tokens_per_s"];
    EXPECT_LE(d["min"].get<double>(), d["median"].get<double>()) << t["config"];
    EXPECT_LE(d["median"].get<double>(), d["max"].get<double>()) << t["config"];
    EXPECT_GT(d["min"].get<double>(), 0.0) << t["config"];
  }
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("bit-identical to the baseline"), std::string::npos);
  EXPECT_NE(html.find("decode tok/s median (min&ndash;max)"), std::string::npos);
  EXPECT_EQ(html.find("<td>0.0</td>"), std::string::npos) << "no unmeasured zero rates";
}

// The audit's rows on a mixture-of-experts model: every deterministic row identical, and a bit
// flipped in the expert combine of one row is caught and named there.
TEST(Audit, ContractHoldsOnExpertsAndABrokenCombineIsNamed) {
  const std::string model = tzero::test::generated_model("tiny-qwen3moe", "q4_k");
  const auto r = tzero::test::run_tzero({"audit", "-m", model, "-n", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("contract holds"), std::string::npos) << r.out;
  const auto b =
      tzero::test::run_tzero({"audit", "-m", model, "-n", "4", "--perturb", "1:ffn_moe_out:2"});
  EXPECT_EQ(b.exit_code, 1) << b.out;
  EXPECT_NE(b.out.find("first at position 2, blk.1.ffn_moe_out"), std::string::npos) << b.out;
}

TEST(Audit, Stories260KContractHolds) {
  TZ_REQUIRE_SHARED(gguf, "gguf/stories260K.gguf");
  const auto r = tzero::test::run_tzero({"audit", "-m", gguf, "-n", "24"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("contract holds"), std::string::npos);
}

TEST(Audit, BrokenConfigurationIsCaughtAndNamed) {
  const std::string model = tzero::test::generated_model("tiny-qwen2", "f16");
  const std::string dir = tzero::test::scratch_dir() + "/audit-broken";
  const auto r = tzero::test::run_tzero(
      {"audit", "-m", model, "-n", "4", "--perturb", "1:ffn_norm:2", "--report", dir});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("CONTRACT BROKEN"), std::string::npos);
  EXPECT_NE(r.out.find("first at position 2, blk.1.ffn_norm"), std::string::npos) << r.out;
  const json j = json::parse(tzero::test::read_file(dir + "/report.json"));
  EXPECT_GT(j["deterministic_failures"].get<int>(), 0);
  // The heatmap places the broken configuration's runs at blk.1, position 2, with its scale.
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("run(s) first diverged at position 2, blk.1:"), std::string::npos);
  EXPECT_NE(html.find("runs per cell:"), std::string::npos);
  EXPECT_NE(html.find(">blk.1</text>"), std::string::npos);
}
