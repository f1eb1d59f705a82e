// SentencePiece-style tokenizer.json files (BPE over "▁" with byte fallback, as Hugging Face
// converts Llama 2, Mistral and Gemma) through `convert --hf-tokenizer`: written by the test,
// imported, and encoded by tzero's SentencePiece tokenizer. Expected ids are Hugging Face's BPE
// worked by hand: lowest merge rank first, ties to the left, unknown characters as bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/gguf.h"
#include "support/test_support.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/vocab.h"

namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

const std::string kMark = "\u2581";

// Ids: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, then the pieces below.
enum : int32_t { kSpace = 259, kA, kB, kC, kSpaceA, kAB, kSpaceAB, kBC, kSpaceSpace };

json vocab() {
  json v = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v[name] = 3 + b;
  }
  v[kMark] = kSpace;
  v["a"] = kA;
  v["b"] = kB;
  v["c"] = kC;
  v[kMark + "a"] = kSpaceA;
  v["ab"] = kAB;
  v[kMark + "ab"] = kSpaceAB;
  v["bc"] = kBC;
  v[kMark + kMark] = kSpaceSpace;
  return v;
}

json added() {
  json a = json::array();
  int id = 0;
  for (const char* t : {"<unk>", "<s>", "</s>"})
    a.push_back({{"id", id++}, {"content", t}, {"special", true}});
  return a;
}

const json kReplace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMark}};
const json kPrepend = {{"type", "Prepend"}, {"prepend", kMark}};

// Merges ranked: "▁ a" 0, "a b" 1, "▁a b" 2, "b c" 3, "▁ ▁" 4.
std::string make_dir(const std::string& name, const json& normalizer, const json& pre,
                     const json& merges = json()) {
  // Its own prefix: the byte-level import tests share the process's scratch folder and names.
  const std::string dir = tzero::test::scratch_dir() + "/spm-" + name;
  std::filesystem::create_directories(dir);
  const json m = merges.is_null()
                     ? json{kMark + " a", "a b", kMark + "a b", "b c", json{kMark, kMark}}
                     : merges;
  const json tj = {{"normalizer", normalizer},
                   {"pre_tokenizer", pre},
                   {"added_tokens", added()},
                   {"model",
                    {{"type", "BPE"},
                     {"unk_token", "<unk>"},
                     {"byte_fallback", true},
                     {"fuse_unk", true},
                     {"vocab", vocab()},
                     {"merges", m}}}};
  tzero::test::write_file(dir + "/tokenizer.json", tj.dump());
  tzero::test::write_file(dir + "/tokenizer_config.json",
                          json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}.dump());
  return dir;
}

std::string import(const std::string& dir) {
  const std::string out = dir + ".gguf";
  tzero::import_hf_tokenizer(dir, out, {});
  return out;
}

std::string error_of(const std::string& dir) {
  try {
    import(dir);
  } catch (const tzero::Error& e) {
    return e.what();
  }
  return "(no error)";
}

json sequence(const char* key, std::vector<json> steps) {
  return {{"type", "Sequence"}, {key, steps}};
}

}  // namespace

// Llama 2: Prepend("▁") + Replace(" " -> "▁"), no pre-tokenizer.
TEST(HfImportSpm, Llama2StyleImportsAsSentencePiece) {
  const std::string gguf =
      import(make_dir("llama2", sequence("normalizers", {kPrepend, kReplace}), json()));
  tzero::GgufFile f(gguf);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_space_prefix", false));
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_TRUE(v.warnings().empty());
  EXPECT_EQ(v.kind(), tzero::Vocab::Kind::Spm);
  EXPECT_EQ(v.unk(), 0);
  EXPECT_EQ(v.bos(), 1);
  EXPECT_EQ(v.eos(), 2);
  EXPECT_EQ(v.type(0), tzero::TokenType::Unknown);
  EXPECT_EQ(v.type(1), tzero::TokenType::Control);
  EXPECT_EQ(v.type(3 + 0x41), tzero::TokenType::Byte);
  EXPECT_EQ(v.type(kAB), tzero::TokenType::Normal);
  // Scores: minus the rank of the first merge giving the token.
  EXPECT_EQ(v.score(kSpaceA), 0.0f);
  EXPECT_EQ(v.score(kAB), -1.0f);
  EXPECT_EQ(v.score(kSpaceAB), -2.0f);
  EXPECT_EQ(v.score(kBC), -3.0f);
  EXPECT_EQ(v.score(kA), -6.0f);  // produced by no merge: -(merges + 1)
  // "ab abc" -> "▁ab▁abc": ▁a (rank 0) twice, then ▁a+b (rank 2) twice; c stays.
  EXPECT_EQ(v.tokenize("ab abc", false, false), (Ids{kSpaceAB, kSpaceAB, kC}));
  // "bc": b+c (rank 3) after ▁ found no partner.
  EXPECT_EQ(v.tokenize("bc", false, false), (Ids{kSpace, kBC}));
  // "é" is no piece: its UTF-8 bytes C3 A9 as byte tokens. "▁▁a": ▁+a (rank 0) comes before
  // ▁+▁ (rank 4), which then has no partner; in "▁a▁▁b" the ▁+▁ pair is left to merge.
  EXPECT_EQ(v.tokenize("\u00E9  a", false, false),
            (Ids{kSpace, 3 + 0xC3, 3 + 0xA9, kSpace, kSpaceA}));
  EXPECT_EQ(v.tokenize("a  b", false, false), (Ids{kSpaceA, kSpaceSpace, kB}));
  EXPECT_EQ(v.tokenize("a", true, false), (Ids{1, kSpaceA}));  // BOS by default
  EXPECT_EQ(v.detokenize(v.tokenize("ab  \u00E9c", false, false)), "ab  \u00E9c");
}

// Gemma: Replace only (no dummy prefix); its Split at " " after the Replace finds nothing.
TEST(HfImportSpm, GemmaStyleHasNoDummyPrefix) {
  const json split = {{"type", "Split"},
                      {"pattern", {{"String", " "}}},
                      {"behavior", "MergedWithPrevious"},
                      {"invert", false}};
  tzero::GgufFile f(import(make_dir("gemma", kReplace, split)));
  EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_space_prefix", true));
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  // "ab▁abc": ▁+a (rank 0), a+b (1), ▁a+b (2). A "▁" one byte into the text is a word start too.
  EXPECT_EQ(v.tokenize("ab abc", false, false), (Ids{kAB, kSpaceAB, kC}));
  EXPECT_EQ(v.tokenize("a b", false, false), (Ids{kA, kSpace, kB}));
  EXPECT_EQ(v.tokenize(" a", false, false), (Ids{kSpaceA}));
}

// Mistral-style files: no normalizer, Metaspace(prepend_scheme, split false).
TEST(HfImportSpm, MetaspaceGivesThePrefixByItsScheme) {
  const json always = {{"type", "Metaspace"},
                       {"replacement", kMark},
                       {"prepend_scheme", "always"},
                       {"split", false}};
  tzero::GgufFile f(import(make_dir("metaspace", json(), always)));
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_TRUE(v.add_space_prefix());
  EXPECT_EQ(v.tokenize("ab abc", false, false), (Ids{kSpaceAB, kSpaceAB, kC}));
  json never = always;
  never["prepend_scheme"] = "never";
  tzero::GgufFile g(import(make_dir("metaspace-never", json(), never)));
  EXPECT_FALSE(tzero::Vocab::from_gguf(g).add_space_prefix());
}

TEST(HfImportSpm, UnsupportedStepsAreNamed) {
  auto err = [](const std::string& name, const json& normalizer, const json& pre) {
    const std::string dir = make_dir(name, normalizer, pre);
    const std::string e = error_of(dir);
    EXPECT_EQ(e.rfind(dir + "/tokenizer.json: ", 0), 0u) << e;
    return e;
  };
  EXPECT_NE(err("nfkc", sequence("normalizers", {json{{"type", "NFKC"}}, kReplace}), json())
                .find("normalizer step 1 'NFKC' is not supported in a SentencePiece-style"),
            std::string::npos);
  const json split_meta = {{"type", "Metaspace"}, {"replacement", kMark}, {"split", true}};
  EXPECT_NE(err("meta-split", json(), split_meta)
                .find("pre_tokenizer step 1 'Metaspace' with split true is not supported"),
            std::string::npos);
  EXPECT_NE(err("punct", kReplace, json{{"type", "Punctuation"}})
                .find("pre_tokenizer step 1 'Punctuation' is not supported in a "
                      "SentencePiece-style"),
            std::string::npos);
  // Byte fallback but no way to turn spaces into "▁".
  EXPECT_NE(err("no-replace", json(), json()).find("needs the normalizer Replace"),
            std::string::npos);
  // --pre is for byte-level BPE only.
  const std::string dir = make_dir("with-pre", kReplace, json());
  try {
    tzero::import_hf_tokenizer(dir, dir + ".gguf", {"gpt-2"});
    FAIL();
  } catch (const tzero::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--pre applies to byte-level BPE"), std::string::npos);
  }
}
