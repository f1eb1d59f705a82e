// --no-mmap and the default load: the model read into memory gives the mapped run's bits, and a
// server started with --no-mmap keeps answering after its model file is truncated in place (a
// mapped file would be a SIGBUS at the next read of a lost page).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>

#include "support/serve_process.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using nlohmann::json;

// The caller's value of an environment variable, put back however the test ends.
struct RestoreEnv {
  explicit RestoreEnv(const char* var) : name(var) {
    if (const char* v = std::getenv(var)) saved = v;
  }
  ~RestoreEnv() {
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }
  const char* name;
  std::optional<std::string> saved;
};

// Proves: the file mapped (TZ_MMAP=1), loaded by default (read into huge-page memory: it fits)
// and read by --no-mmap give the same bits.
TEST(NoMmap, RunGivesTheMappedBits) {
  const std::string model = test::generated_model("tiny-qwen2", "q4_k");
  std::string digest[3];
  const RestoreEnv restore("TZ_MMAP");
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> args = {"run", "-m", model, "-n", "8", "-p", "the cat", "--json"};
    if (i == 0)
      ::setenv("TZ_MMAP", "1", 1);
    else
      ::unsetenv("TZ_MMAP");
    if (i == 2) args.push_back("--no-mmap");
    const auto r = test::run_tzero(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    digest[i] = json::parse(r.out)["logits_digest"];
  }
  EXPECT_EQ(digest[0], digest[1]);
  EXPECT_EQ(digest[0], digest[2]);
}

// Proves: the matrices repacked at load for the kernels (kernels/weight_layout.h: the default
// load reads the file into memory, and the avx512 and amx sets read the 32-element types in the
// Blocks8 layout and the K-quants and IQ4_XS in Rows16) give the mapped file's bits (never
// repacked) and its fingerprint, whose model_xxh128 is the file's as read: tied output (tiny-qwen2,
// its embedding rows too), fused rows (tiny-phi3), experts (tiny-qwen3moe, tiny-gpt-oss with MXFP4
// and its biases, MLA's per-head matrices in tiny-deepseek2), a prompt long enough for the batched
// kernels.
TEST(NoMmap, RepackedMatricesGiveTheMappedBits) {
  const RestoreEnv restore("TZ_MMAP"), restore_layout("TZ_WEIGHT_LAYOUT");
  const std::pair<const char*, const char*> models[] = {
      {"tiny-qwen2", "q4_0"},      {"tiny-qwen2", "q8_0"},      {"tiny", "q5_1"},
      {"tiny-phi3", "q5_0"},       {"tiny-qwen3moe", "iq4_nl"}, {"tiny-gpt-oss", "mxfp4"},
      {"tiny-deepseek2", "q4_1"},  {"tiny-qwen35", "q4_0"},     {"tiny-qwen2", "q4_k"},
      {"tiny-qwen3moe", "q4_k"},   {"tiny-deepseek2", "q4_k"},  {"tiny-phi3", "q5_k"},
      {"tiny-qwen3moe", "iq4_xs"}, {"tiny-qwen2", "q6_k"},      {"tiny-qwen2", "q2_k"},
      {"tiny-qwen3moe", "q3_k"}};
  // How many tensors a default load repacks (tzero bench --json), and its kernel set.
  auto repacked = [](const std::string& model) {
    const auto b = test::run_tzero(
        {"bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--stream-mib", "0", "--json"});
    EXPECT_EQ(b.exit_code, 0) << b.err;
    const json j = json::parse(b.out);
    return std::make_tuple(j["blocks8_tensors"].get<int>(), j["rows16_tensors"].get<int>(),
                           j["kernels"].get<std::string>());
  };
  for (const auto& [preset, dtype] : models) {
    const std::string model = test::generated_model(preset, dtype);
    ::unsetenv("TZ_MMAP");
    // The x86 sets from avx2 up read every 32-element type in Blocks8, avx512 and amx the
    // K-quants and IQ4_XS in Rows16: the load did repack.
    const auto [n8, n16, kernels] = repacked(model);
    const std::string d = dtype;
    const bool rows16 =
        d == "q4_k" || d == "q5_k" || d == "q6_k" || d == "iq4_xs" || d == "q2_k" || d == "q3_k";
    if (rows16 && (kernels == "avx512" || kernels == "amx"))
      EXPECT_GT(n16, 0) << preset << " " << dtype;
    else if (!rows16 && (kernels == "avx2" || kernels == "avx512" || kernels == "amx"))
      EXPECT_GT(n8, 0) << preset << " " << dtype;
    else
      std::printf("[ note ] kernels %s read no repacked rows: %s compares two file layouts\n",
                  kernels.c_str(), preset);
    json out[2];
    for (int i = 0; i < 2; ++i) {
      if (i == 0)
        ::setenv("TZ_MMAP", "1", 1);
      else
        ::unsetenv("TZ_MMAP");
      const auto r = test::run_tzero({"run", "-m", model, "-n", "6", "-p",
                                      "the cat sat on the mat and looked at the dog", "--json"});
      ASSERT_EQ(r.exit_code, 0) << preset << " " << dtype << ": " << r.err;
      out[i] = json::parse(r.out);
    }
    EXPECT_EQ(out[0]["logits_digest"], out[1]["logits_digest"]) << preset << " " << dtype;
    EXPECT_EQ(out[0]["tokens"], out[1]["tokens"]) << preset << " " << dtype;
    EXPECT_EQ(out[0]["fingerprint"], out[1]["fingerprint"]) << preset << " " << dtype;
  }
  // TZ_WEIGHT_LAYOUT=file keeps the file's layout.
  ::setenv("TZ_WEIGHT_LAYOUT", "file", 1);
  const auto [n8, n16, kernels] = repacked(test::generated_model("tiny-qwen2", "q4_k"));
  EXPECT_EQ(n8 + n16, 0) << kernels;
  EXPECT_EQ(std::get<0>(repacked(test::generated_model("tiny", "q5_1"))), 0);
  ::unsetenv("TZ_WEIGHT_LAYOUT");
}

TEST(NoMmap, ServerSurvivesItsFileTruncatedInPlace) {
  const std::string copy = test::scratch_dir() + "/truncated-later.gguf";
  std::filesystem::copy_file(test::generated_model("tiny", "q8_0"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  test::ServeProcess srv({"-m", copy, "--no-mmap", "-t", "1"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  ASSERT_EQ(::truncate(copy.c_str(), 0), 0);
  auto c = srv.client();
  int status = 0;
  const json j =
      test::post_json(*c, "/v1/completions",
                      {{"prompt", "the dog"}, {"max_tokens", 8}, {"temperature", 0}}, &status);
  EXPECT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["usage"]["completion_tokens"], 8) << j.dump();
  EXPECT_EQ(srv.stop(SIGTERM), 0);
}

}  // namespace
}  // namespace tzero
