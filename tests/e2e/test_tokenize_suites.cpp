// `tzero tokenize -m VOCAB.gguf -f FILE --no-bos --json`, case by case, on llama.cpp's
// test-tokenizer-0 suites: llama-spm, gpt-2, and qwen2 through `tzero convert --hf-tokenizer`.
// Also: an unknown tokenizer.ggml.pre warns on stderr and falls back to the default, and the
// convert command's errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "unit/test_tokenizer_suite.h"

namespace {

using tzero::test::run_tzero;

std::vector<int32_t> cli_ids(const std::string& vocab, const std::string& text_path,
                             std::string* err = nullptr) {
  const auto r = run_tzero({"tokenize", "-m", vocab, "-f", text_path, "--no-bos", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (err) *err = r.err;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(r.out)["ids"].get<std::vector<int32_t>>();
}

void run_suite_cli(const std::string& vocab, const std::string& inp, const std::string& out,
                   const char* name) {
  const auto cases = tzero::test::load_suite(inp, out);
  ASSERT_EQ(cases.size(), 46u) << "the suite has 46 cases";
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path =
        tzero::test::scratch_dir() + "/" + name + "-case-" + std::to_string(i) + ".txt";
    tzero::test::write_file(path, cases[i].text);
    const auto got = cli_ids(vocab, path);
    EXPECT_EQ(got, cases[i].ids) << name << " case " << i << ": \"" << cases[i].text << "\"";
    passed += got == cases[i].ids;
  }
  std::printf("%s suite through the CLI: %d/%zu cases passed\n", name, passed, cases.size());
}

}  // namespace

TEST(TokenizeSuitesCli, LlamaSpm) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-llama-spm.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-llama-spm.gguf.out");
  run_suite_cli(vocab, inp, out, "llama-spm");
}

TEST(TokenizeSuitesCli, Gpt2) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-gpt-2.gguf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-gpt-2.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-gpt-2.gguf.out");
  run_suite_cli(vocab, inp, out, "gpt-2");
}

TEST(TokenizeSuitesCli, Qwen2ThroughHfImport) {
  TZ_REQUIRE_SHARED(dir, "vocab/qwen2-hf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-qwen2.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-qwen2.gguf.out");
  const std::string gguf = tzero::test::scratch_dir() + "/qwen2-cli.gguf";
  // The directory has no tokenizer.json to tell the pre-tokenizer from: it must be named.
  auto r = run_tzero({"convert", "--hf-tokenizer", dir, "-o", gguf});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give --pre NAME"), std::string::npos) << r.err;
  r = run_tzero({"convert", "--hf-tokenizer", dir, "--pre", "qwen2", "-o", gguf});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("151643 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pre-tokenizer qwen2"), std::string::npos) << r.err;
  run_suite_cli(gguf, inp, out, "qwen2");
}

TEST(TokenizeSuitesCli, UnknownPreWarnsAndUsesTheDefault) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile src(vocab);
  tzero::GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.pre") w.add_value(key, value);
  w.add_string("tokenizer.ggml.pre", "not-a-real-pre");
  const std::string odd = tzero::test::scratch_dir() + "/gpt2-odd-pre.gguf";
  w.write(odd);
  const std::string text = tzero::test::scratch_dir() + "/odd-pre.txt";
  tzero::test::write_file(text, "Hello world, it's 2024!\n  ok");
  std::string err;
  const auto ids = cli_ids(odd, text, &err);
  EXPECT_NE(err.find("warning: "), std::string::npos) << err;
  EXPECT_NE(err.find("unknown pre-tokenizer 'not-a-real-pre'"), std::string::npos) << err;
  EXPECT_EQ(ids, cli_ids(vocab, text));
}

TEST(TokenizeSuitesCli, ConvertNeedsExactlyOneSource) {
  auto r = run_tzero({"convert", "-o", tzero::test::scratch_dir() + "/x.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--hf-tokenizer"), std::string::npos) << r.err;
  r = run_tzero({"convert", "--llama2c", "a.bin", "--hf-tokenizer", "dir", "-o", "x.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_tzero({"convert", "--llama2c", "a.bin", "-o", "x.gguf"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
}

// convert --hf-tokenizer on tokenizer.json pipelines, through the binary: an unsupported step is
// one error line and exit 2; an unnamed supported pipeline is stored and used by tokenize.
TEST(TokenizeSuitesCli, ConvertPipelineStepsAndErrors) {
  using nlohmann::json;
  const std::string dir = tzero::test::scratch_dir() + "/cli-pipeline";
  std::filesystem::create_directories(dir);
  json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}, {"\u0120", 3}};
  auto write = [&](const json& pre) {
    tzero::test::write_file(
        dir + "/tokenizer.json",
        json{{"pre_tokenizer", pre},
             {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}}}
            .dump());
  };
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  write({{"type", "Sequence"},
         {"pretokenizers",
          {byte_level,
           json{{"type", "Split"},
                {"pattern", {{"String", "\u0120"}}},
                {"behavior", "Contiguous"},
                {"invert", false}},
           json{{"type", "BertPreTokenizer"}}}}});
  const std::string gguf = dir + ".gguf";
  auto r = run_tzero({"convert", "--hf-tokenizer", dir, "-o", gguf});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tzero: error: " + dir +
                       "/tokenizer.json: pre_tokenizer step 3 'BertPreTokenizer' is not supported "
                       "(supported: Split, CharDelimiterSplit, Digits, Punctuation, Whitespace, "
                       "WhitespaceSplit, ByteLevel, Sequence)\n");
  // Without the last step: a Contiguous split after ByteLevel, stored as the pipeline.
  write({{"type", "Sequence"},
         {"pretokenizers",
          {byte_level, json{{"type", "Split"},
                            {"pattern", {{"String", "\u0120"}}},
                            {"behavior", "MergedWithPrevious"},
                            {"invert", false}}}}});
  r = run_tzero({"convert", "--hf-tokenizer", dir, "-o", gguf});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pre-tokenizer tzero-pipeline (from tokenizer.json)"), std::string::npos)
      << r.err;
  r = run_tzero({"tokenize", "-m", gguf, "-p", "ab ab", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\":[2,3,2]}\n");  // "ab " + "ab": the space joins the word before it
  tzero::test::write_file(dir + "/tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vo");
  r = run_tzero({"convert", "--hf-tokenizer", dir, "-o", gguf, "--force"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("tzero: error: " + dir + "/tokenizer.json: not valid JSON", 0), 0u)
      << r.err;
}
