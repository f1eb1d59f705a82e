// The numerics fingerprint: the same for configurations the contract proves equivalent
// (threads, kernels), different when something that changes the bits changes (mode, weights).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

using nlohmann::json;

namespace {
std::string fingerprint(const std::vector<std::string>& args) {
  std::vector<std::string> a = {"run", "-n", "2", "-p", "the dog", "--json"};
  a.insert(a.end(), args.begin(), args.end());
  const auto r = tzero::test::run_tzero(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["fingerprint"];
}
}  // namespace

TEST(Fingerprint, StableWhereBitsAreAndChangesWhereTheyMayNot) {
  const std::string m1 = tzero::test::generated_model("tiny", "q8_0", 1);
  const std::string m2 = tzero::test::generated_model("tiny", "q8_0", 2);
  const std::string base = fingerprint({"-m", m1, "-t", "1"});
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(fingerprint({"-m", m1, "-t", "3", "-b", "1"}), base);
  EXPECT_EQ(fingerprint({"-m", m1, "--kernels", "scalar"}), base);
  EXPECT_NE(fingerprint({"-m", m1, "--mode", "fast"}), base);
  EXPECT_NE(fingerprint({"-m", m2}), base);
  const auto r = tzero::test::run_tzero({"fingerprint", "-m", m1, "--json"});
  ASSERT_EQ(r.exit_code, 0);
  const json j = json::parse(r.out);
  EXPECT_EQ(j["fingerprint"], base);
  EXPECT_EQ(j["manifest"]["architecture"]["name"], "llama");
  EXPECT_EQ(j["manifest"]["tensor_types"]["q8_0"].get<int>(),
            16);  // 2 layers x 7 matrices, embeddings, output
}

// A LongRoPE model (phi3) takes its long or short rope factors from the context size, as
// llama.cpp does, so the context changes its bits and must change its fingerprint; for other
// models the context is not hashed (it changes nothing).
TEST(Fingerprint, LongRopeContextChoosesTheFactorsAndIsHashed) {
  const std::string phi = tzero::test::generated_model("tiny-phi3", "q8_0");
  auto digest = [](const std::string& m, const char* ctx) {
    const auto r = tzero::test::run_tzero(
        {"run", "-m", m, "-n", "8", "-p", "the dog saw a big tree", "--json", "-c", ctx});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  };
  const json long_ctx = digest(phi, "512"), short_ctx = digest(phi, "256");
  EXPECT_NE(long_ctx["logits_digest"], short_ctx["logits_digest"]);
  EXPECT_NE(long_ctx["fingerprint"], short_ctx["fingerprint"]);
  EXPECT_EQ(long_ctx["fingerprint_manifest"]["rope_factors"], "long (context 512)");
  EXPECT_EQ(short_ctx["fingerprint_manifest"]["rope_factors"], "short");
  EXPECT_EQ(digest(phi, "300")["fingerprint_manifest"]["rope_factors"], "long (context 300)");
  const auto fp = tzero::test::run_tzero({"fingerprint", "-m", phi, "--json", "-c", "256"});
  ASSERT_EQ(fp.exit_code, 0) << fp.err;
  EXPECT_EQ(json::parse(fp.out)["fingerprint"], short_ctx["fingerprint"]);
  const std::string tiny = tzero::test::generated_model("tiny", "q8_0");
  EXPECT_EQ(digest(tiny, "512")["fingerprint"], digest(tiny, "256")["fingerprint"]);
  EXPECT_EQ(digest(tiny, "512")["logits_digest"], digest(tiny, "256")["logits_digest"]);
}

// `fingerprint --help` names the keys `--json` prints ("fingerprint" and "manifest"), and the
// hash is the one `run --json` reports.
TEST(Fingerprint, HelpNamesTheJsonKeys) {
  const std::string model = tzero::test::generated_model("tiny", "f32");
  const auto help = tzero::test::run_tzero({"fingerprint", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("Print {\"fingerprint\": HASH, \"manifest\": {...}} as JSON"),
            std::string::npos)
      << help.out;
  EXPECT_EQ(help.out.find("{hash"), std::string::npos) << help.out;
  const auto r = tzero::test::run_tzero({"fingerprint", "-m", model, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_TRUE(j.contains("manifest"));
  EXPECT_EQ(j["fingerprint"], fingerprint({"-m", model}));
}
