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
