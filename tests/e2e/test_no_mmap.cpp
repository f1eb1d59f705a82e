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

#include "support/serve_process.h"
#include "support/test_support.h"

namespace tzero {
namespace {

using nlohmann::json;

// Proves: the file mapped (TZ_MMAP=1), loaded by default (read into huge-page memory: it fits)
// and read by --no-mmap give the same bits.
TEST(NoMmap, RunGivesTheMappedBits) {
  const std::string model = test::generated_model("tiny-qwen2", "q4_k");
  std::string digest[3];
  // The caller's TZ_MMAP, put back however the test ends.
  struct Restore {
    std::optional<std::string> saved;
    ~Restore() {
      if (saved)
        ::setenv("TZ_MMAP", saved->c_str(), 1);
      else
        ::unsetenv("TZ_MMAP");
    }
  } restore{std::getenv("TZ_MMAP") ? std::optional<std::string>(std::getenv("TZ_MMAP"))
                                   : std::nullopt};
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
