// Text read from a model or tokenizer file and quoted in an error or a warning is cut to 200
// bytes (base/excerpt.h), so the message stays one short line whatever the file holds; JSON read
// from such files is refused past 256 levels of nesting before it is built (base/bounded_json.h).
// Each case puts a megabyte where a name is expected and bounds the message's length.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/hparams.h"
#include "support/test_support.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/vocab.h"

namespace {

using nlohmann::json;

constexpr size_t kMiB = 1 << 20;
// A message quoting one cut excerpt plus its own words and a path stays under this.
constexpr size_t kShort = 600;

const std::string kBig(kMiB, 'x');
const std::string kBigSuffix = "... (" + std::to_string(kMiB) + " bytes)";

std::string scratch(const std::string& name) {
  return tzero::test::scratch_dir() + "/quoted_" + name;
}

// The tzero::Error message of f(), or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const tzero::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A vocabulary GGUF: three tokens, one merge, model `model`; extra strings set by `kv`.
std::string vocab_file(const std::string& name, const std::string& model,
                       const std::vector<std::pair<std::string, std::string>>& kv = {}) {
  tzero::GgufWriter w;
  w.add_string("tokenizer.ggml.model", model);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  for (const auto& [k, v] : kv) w.add_string(k, v);
  const std::string path = scratch(name);
  w.write(path);
  return path;
}

}  // namespace

// general.architecture of a megabyte: "architecture '<200 bytes>... (1048576 bytes)' is not
// supported", not the megabyte.
TEST(QuotedFileText, ArchitectureNameIsCut) {
  tzero::GgufWriter w;
  w.add_string("general.architecture", kBig);
  w.add_tensor("t", tzero::TensorType::F32, {4}, std::vector<uint8_t>(16, 0));
  const std::string path = scratch("arch.gguf");
  w.write(path);
  const tzero::GgufFile f(path);
  const std::string e = error_of([&] { tzero::read_hparams(f); });
  EXPECT_NE(e.find("architecture 'xxx"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find(kBigSuffix + "' is not supported"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);
}

// tokenizer.ggml.model and tokenizer.ggml.pre of a megabyte: the error and the warning are cut.
TEST(QuotedFileText, TokenizerNamesAreCut) {
  const tzero::GgufFile f(vocab_file("model.gguf", kBig));
  const std::string e = error_of([&] { tzero::Vocab::from_gguf(f); });
  EXPECT_NE(e.find(kBigSuffix + "' is not supported yet"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  const tzero::GgufFile g(vocab_file("pre.gguf", "gpt2", {{"tokenizer.ggml.pre", kBig}}));
  const tzero::Vocab v = tzero::Vocab::from_gguf(g);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("unknown pre-tokenizer 'xxx"), std::string::npos);
  EXPECT_NE(v.warnings()[0].find(kBigSuffix), std::string::npos);
  EXPECT_LT(v.warnings()[0].size(), kShort + 400);  // the warning lists the known names
}

// tokenizer.tzero.pipeline: malformed JSON whose last token is a megabyte (nlohmann quotes it in
// its message), JSON nested 100,000 deep (refused before parsing), and a step type of a megabyte.
TEST(QuotedFileText, StoredPipelineMessagesAreCut) {
  const std::string where = "f.gguf: metadata 'tokenizer.tzero.pipeline'";
  std::string e = error_of(
      [&] { tzero::parse_pipeline_metadata(R"({"version": 1, "x": ")" + kBig + "\n\"}", where); });
  EXPECT_NE(e.find(where + ": not valid JSON: "), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  e = error_of([&] {
    tzero::parse_pipeline_metadata(std::string(100000, '[') + std::string(100000, ']'), where);
  });
  EXPECT_NE(e.find("JSON nested deeper than 256 levels"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  json big_type = {{"version", 1}};
  big_type["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers", json::array({json{{"type", kBig}}})}};
  e = error_of([&] { tzero::parse_pipeline_metadata(big_type.dump(), where); });
  EXPECT_NE(e.find("pre_tokenizer step 1 'xxx"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find(kBigSuffix + "' is not supported"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort + 200);  // the message lists the supported steps

  // A regular expression that does not compile is quoted cut too.
  const json big_regex = {
      {"version", 1},
      {"pre_tokenizer",
       {{"type", "Split"}, {"pattern", {{"Regex", "(" + kBig}}}, {"behavior", "Isolated"}}}};
  e = error_of([&] { tzero::parse_pipeline_metadata(big_regex.dump(), where); });
  EXPECT_NE(e.find("regular expression /(xxx"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);
}

// convert --hf-tokenizer: a token text, a merge line and tokenizer.json's own JSON errors are cut.
TEST(QuotedFileText, HfTokenizerFilesMessagesAreCut) {
  const std::string dir = scratch("hf");
  std::filesystem::create_directories(dir);
  auto import = [&] { tzero::import_hf_tokenizer(dir, dir + ".gguf", {"gpt-2"}); };

  tzero::test::write_file(dir + "/vocab.json", json{{kBig, "not an id"}}.dump());
  tzero::test::write_file(dir + "/merges.txt", "a b\n");
  std::string e = error_of(import);
  EXPECT_NE(e.find(": token 'xxx"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find(kBigSuffix + "' has no valid id"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  tzero::test::write_file(dir + "/vocab.json", json{{"a", 0}, {"b", 1}, {"ab", 2}}.dump());
  tzero::test::write_file(dir + "/merges.txt", kBig + "\n");
  e = error_of(import);
  EXPECT_NE(e.find("a merge is not \"a b\": 'xxx"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  tzero::test::write_file(dir + "/merges.txt", "a b\n");
  tzero::test::write_file(dir + "/tokenizer.json", R"({"model": ")" + kBig + "\n\"}");
  e = error_of(import);
  EXPECT_NE(e.find("tokenizer.json: not valid JSON: "), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);

  tzero::test::write_file(dir + "/tokenizer.json", std::string(100000, '{'));
  e = error_of(import);
  EXPECT_NE(e.find("JSON nested deeper than 256 levels"), std::string::npos) << e.substr(0, 300);
  EXPECT_LT(e.size(), kShort);
}
