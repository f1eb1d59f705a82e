// `tzero tokenize` on the tokenizer suite's vocab-only GGUF, as the suites expect (no BOS).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

TEST(TokenizeCli, JsonIdsWithoutBos) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  auto r = tzero::test::run_tzero(
      {"tokenize", "-m", vocab, "-p", "ied 4 ½ months", "--no-bos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"],
            nlohmann::json::array({474, 287, 29871, 29946, 29871, 30226, 7378}));
  r = tzero::test::run_tzero({"tokenize", "-m", vocab, "-p", "Hello"});
  EXPECT_EQ(r.out, "1 15043\n");
}

TEST(TokenizeCli, ReadsFileAndNeedsText) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const std::string path = tzero::test::scratch_dir() + "/text.txt";
  tzero::test::write_file(path, " Hello");
  auto r = tzero::test::run_tzero({"tokenize", "-m", vocab, "-f", path, "--no-bos"});
  EXPECT_EQ(r.out, "29871 15043\n");
  r = tzero::test::run_tzero({"tokenize", "-m", vocab});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-p TEXT or -f FILE"), std::string::npos);
}
