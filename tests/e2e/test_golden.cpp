// The golden table (tests/data/golden_digests.tsv): for every tiny gen-model preset and dtype
// (seed 1) and for stories260K, the model file's XXH3-128 and the logits digest of a fixed
// prompt. A refactor must leave every row as it is. A row may change only with a deliberate,
// versioned change of a canonical order (docs/DETERMINISM.md): then bump the table's version
// line and regenerate it with
//   TZ_GOLDEN_PRINT=1 build/tests/tz_e2e --gtest_filter='Golden.*'
// which prints the rows this build computes (the test still compares them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/hash.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

struct GoldenRow {
  // "preset/dtype" (gen-model, seed 1), "shared:gguf/stories260K.gguf", or "long:preset/dtype":
  // the same model over kLongRepeats copies of the prompt (several attention position blocks).
  std::string model;
  std::string file_hash;
  std::string digest;  // logits digest of `tzero run -n 16 -p kPrompt`
};

constexpr const char* kPrompt = "the little dog saw a big tree and was happy when the sun came up";
constexpr int kLongRepeats = 20;  // 762 prompt tokens with tiny's vocabulary: 4 blocks of attn-v2

std::vector<GoldenRow> read_table(std::string* version) {
  std::ifstream in(std::string(TZ_SOURCE_DIR) + "/tests/data/golden_digests.tsv");
  EXPECT_TRUE(in.good()) << "tests/data/golden_digests.tsv is missing";
  std::vector<GoldenRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# version:", 0) == 0) *version = line.substr(10);
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    GoldenRow r;
    f >> r.model >> r.file_hash >> r.digest;
    rows.push_back(r);
  }
  return rows;
}

// The path of a row's model, or "" when its shared file is absent.
std::string model_path(const std::string& model) {
  if (model.rfind("long:", 0) == 0) return model_path(model.substr(5));
  if (model.rfind("shared:", 0) == 0) return tzero::test::shared_data(model.substr(7));
  const size_t slash = model.find('/');
  return tzero::test::generated_model(model.substr(0, slash), model.substr(slash + 1));
}

// The `tzero run` arguments of a row, plus `extra`.
std::vector<std::string> golden_args(const GoldenRow& row, const std::string& path,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run", "-m", path, "-n", "16", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (row.model.rfind("long:", 0) == 0) {
    std::string prompt;
    for (int i = 0; i < kLongRepeats; ++i) prompt += std::string(i ? " " : "") + kPrompt;
    args.insert(args.end(), {"-c", "1024", "-p", prompt});
  } else {
    args.insert(args.end(), {"-p", kPrompt});
  }
  return args;
}

}  // namespace

TEST(Golden, TableCoversEveryTinyPresetAndDtype) {
  std::string version;
  const std::vector<GoldenRow> rows = read_table(&version);
  EXPECT_FALSE(version.empty()) << "the table has no '# version:' line";
  size_t n_gen = 0;
  // tiny-eot has tiny's weights (its digests equal tiny's: the golden prompt's 16 tokens never
  // reach its EOT) and its own file hash (the EOT and chat template metadata).
  for (const char* preset :
       {"tiny", "tiny-qwen2", "tiny-qwen3", "tiny-eot", "tiny-qwen3moe", "tiny-mixtral",
        "tiny-qwen2moe", "tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-llama3", "tiny-gpt-oss",
        "tiny-glm4moe", "tiny-deepseek2", "tiny-qwen3next", "tiny-qwen35", "tiny-qwen35moe",
        "tiny-nemotron-h"})
    for (const char* dtype :
         {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "mxfp4", "q2_k",
          "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs", "q3_k_m", "q4_k_m", "q5_k_m"}) {
      const std::string name = std::string(preset) + "/" + dtype;
      bool found = false;
      for (const auto& r : rows) found = found || r.model == name;
      EXPECT_TRUE(found) << name << " has no golden row";
      n_gen += found;
    }
  EXPECT_EQ(n_gen, 342u);
  bool stories = false;
  for (const auto& r : rows) stories = stories || r.model == "shared:gguf/stories260K.gguf";
  EXPECT_TRUE(stories) << "stories260K has no golden row";
  size_t n_long = 0;
  for (const auto& r : rows) n_long += r.model.rfind("long:", 0) == 0;
  EXPECT_GE(n_long, 6u) << "the long-context rows (several attention blocks, experts with "
                           "groups of 16+ tokens) are missing";
}

TEST(Golden, EveryDigestIsTheTables) {
  std::string version;
  const std::vector<GoldenRow> rows = read_table(&version);
  ASSERT_FALSE(rows.empty());
  const bool print = std::getenv("TZ_GOLDEN_PRINT") != nullptr;
  int checked = 0;
  for (const GoldenRow& row : rows) {
    SCOPED_TRACE(row.model);
    const std::string path = model_path(row.model);
    if (path.empty()) {
      std::cout << "[ SKIPPED  ] " << row.model << ": shared data absent (../shared/data)\n";
      continue;
    }
    const std::string bytes = tzero::test::read_file(path);
    const std::string file_hash = tzero::xxh128_hex(bytes.data(), bytes.size());
    CliResult r = run_tzero(golden_args(row, path, {"-t", "2"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string digest = json::parse(r.out)["logits_digest"];
    if (print) std::cout << row.model << "\t" << file_hash << "\t" << digest << "\n";
    EXPECT_EQ(file_hash, row.file_hash) << "the model file changed (gen-model or shared data)";
    EXPECT_EQ(digest, row.digest) << "the logits changed: a canonical order changed";
    ++checked;
  }
  std::cout << "golden rows checked: " << checked << " of " << rows.size() << "\n";
}

// The long rows over other thread counts and prefill chunks: prefill splits (token, kv head)
// items by cost, decode of one sequence spreads attn-v2's position blocks over the threads (tiny
// has 2 kv heads, so 2 items, fewer than 4 per thread). Neither may change a bit.
TEST(Golden, LongRowsDoNotDependOnThreadsOrChunks) {
  std::string version;
  int checked = 0;
  for (const GoldenRow& row : read_table(&version)) {
    if (row.model.rfind("long:", 0) != 0) continue;
    SCOPED_TRACE(row.model);
    const std::string path = model_path(row.model);
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"-t", "1"}, {"-t", "3", "-b", "5"}, {"-t", "4", "-b", "512"}}) {
      CliResult r = run_tzero(golden_args(row, path, extra));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(std::string(json::parse(r.out)["logits_digest"]), row.digest)
          << extra[0] << " " << extra[1] << (extra.size() > 2 ? " -b " + extra[3] : "");
      ++checked;
    }
  }
  EXPECT_GE(checked, 18);
}

// The mixture-of-experts rows under every kernel set: the long rows group 100+ tokens per
// expert (the batched, tiled and AMX-sized kernels), the short ones a few (the decode kernels).
TEST(Golden, MoeRowsDoNotDependOnKernels) {
  std::string version;
  // The sets this build and CPU run (selecting another is an error, exit 2).
  std::vector<std::string> sets;
  const std::string probe = tzero::test::generated_model("tiny", "f32");
  for (const char* k :
       {"scalar", "avx2", "avx512", "amx", "amx-emu", "neon", "neon-dotprod", "neon-i8mm"})
    if (run_tzero({"run", "-m", probe, "-n", "1", "-p", "a", "--kernels", k}).exit_code == 0)
      sets.push_back(k);
  std::cout << "kernel sets:";
  for (const auto& k : sets) std::cout << " " << k;
  std::cout << "\n";
  int checked = 0;
  for (const GoldenRow& row : read_table(&version)) {
    // Experts, and the linear attention's recurrence (delta-v1) of the hybrids.
    if (row.model.find("moe") == std::string::npos &&
        row.model.find("mixtral") == std::string::npos &&
        row.model.find("qwen3next") == std::string::npos &&
        row.model.find("qwen35/") == std::string::npos &&
        row.model.find("nemotron") == std::string::npos)
      continue;
    const bool is_long = row.model.rfind("long:", 0) == 0;
    if (!is_long && row.model.find("/q8_0") == std::string::npos &&
        row.model.find("/q4_k") == std::string::npos)
      continue;
    SCOPED_TRACE(row.model);
    for (const std::string& k : sets) {
      if (k == "amx-emu" && !is_long) continue;  // the emulator's tiles take 16+ tokens
      CliResult r = run_tzero(golden_args(row, model_path(row.model), {"--kernels", k}));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(std::string(json::parse(r.out)["logits_digest"]), row.digest) << k;
      ++checked;
    }
  }
  std::cout << "MoE rows checked over kernel sets: " << checked << "\n";
  EXPECT_GE(checked, 9);
}
