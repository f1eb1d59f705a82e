// tzero convert --hf-tokenizer as a library call: Hugging Face tokenizer directories written
// here (a byte-level alphabet, a few merges, tokenizer.json variants) and the real Qwen2 one.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

const char* const kQwen2 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                           R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kLlama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
                            R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json split(const char* re) {
  return {
      {"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}};
}
json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

std::string enc(const std::string& raw) {
  std::string s;
  tzero::byte_level::encode(raw, s);
  return s;
}

// A directory with vocab.json (the 256 byte characters, then "ab"), merges.txt ("a b") and,
// unless null, tokenizer.json made of `pre`, `normalizer` and `ignore_merges`.
std::string make_dir(const std::string& name, const json& pre, const json& normalizer,
                     bool ignore_merges = false, const json& config = json()) {
  const std::string dir = tzero::test::scratch_dir() + "/" + name;
  std::filesystem::create_directories(dir);
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[enc(std::string(1, char(b)))] = b;
  vocab["ab"] = 256;
  tzero::test::write_file(dir + "/vocab.json", vocab.dump());
  tzero::test::write_file(dir + "/merges.txt", "#version: 0.2\na b\n");
  if (!pre.is_null() || !normalizer.is_null()) {
    json tj = {{"version", "1.0"},
               {"normalizer", normalizer},
               {"pre_tokenizer", pre},
               {"model", {{"type", "BPE"}, {"ignore_merges", ignore_merges}}},
               {"added_tokens",
                {{{"id", 257}, {"content", "<|endoftext|>"}, {"special", true}},
                 {{"id", 258}, {"content", "<tool>"}, {"special", false}}}}};
    tzero::test::write_file(dir + "/tokenizer.json", tj.dump());
  }
  if (!config.is_null()) tzero::test::write_file(dir + "/tokenizer_config.json", config.dump());
  return dir;
}

std::string import(const std::string& dir, const std::string& pre = "") {
  const std::string out = dir + ".gguf";
  tzero::import_hf_tokenizer(dir, out, {pre});
  return out;
}

std::string error_of(const std::string& dir, const std::string& pre = "") {
  try {
    import(dir, pre);
  } catch (const tzero::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string pre_of(const std::string& gguf) {
  tzero::GgufFile f(gguf);
  return f.get_string("tokenizer.ggml.pre");
}

const json kNfc = {{"type", "NFC"}};

}  // namespace

TEST(HfImport, RecognizesPreTokenizersFromTokenizerJson) {
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(kQwen2), byte_level(false)};
  EXPECT_EQ(pre_of(import(make_dir("qwen2", seq, kNfc))), "qwen2");
  seq["pretokenizers"] = {split(kLlama3), byte_level(false)};
  EXPECT_EQ(pre_of(import(make_dir("llama3", seq, json(), /*ignore_merges=*/true))), "llama-bpe");
  EXPECT_EQ(pre_of(import(make_dir("gpt2", byte_level(true), json()))), "gpt-2");
  EXPECT_EQ(pre_of(import(make_dir("neox", byte_level(true), kNfc))), "mpt");
  seq["pretokenizers"] = {{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                          byte_level(true),
                          {{"type", "Digits"}, {"individual_digits", false}},
                          split("[0-9][0-9][0-9]")};
  EXPECT_EQ(pre_of(import(make_dir("falcon", seq, json()))), "falcon");
  seq["pretokenizers"] = {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)};
  EXPECT_EQ(pre_of(import(make_dir("starcoder", seq, json()))), "starcoder");
  // DeepSeek Coder, written as its tokenizer.json writes it (literal CR and LF in a class).
  seq["pretokenizers"] = {split("[\r\n]"),
                          split(R"(\s?\p{L}+)"),
                          split(R"(\s?\p{P}+)"),
                          split("[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+"),
                          {{"type", "Digits"}, {"individual_digits", true}},
                          byte_level(false)};
  EXPECT_EQ(pre_of(import(make_dir("dscoder", seq, json()))), "deepseek-coder");
}

// A pipeline that is no named one is written as itself (tokenizer.tzero.pipeline).
TEST(HfImport, UnrecognizedPipelineIsStoredAndMissingTokenizerJsonNeedsTheFlag) {
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(R"(\p{L}+)"), byte_level(false)};
  const std::string dir = make_dir("odd", seq, json());
  const std::string gguf = import(dir);
  EXPECT_EQ(pre_of(gguf), "tzero-pipeline");
  {
    tzero::GgufFile f(gguf);
    EXPECT_TRUE(f.has("tokenizer.tzero.pipeline"));
    const tzero::Vocab v = tzero::Vocab::from_gguf(f);
    EXPECT_TRUE(v.warnings().empty());
    EXPECT_EQ(v.pre(), "tzero-pipeline");
    // \p{L}+ isolates letter runs: "ab" is one word (merged to 256), " " and "1" are others.
    EXPECT_EQ(v.tokenize("ab 1", false, false), (Ids{256, ' ', '1'}));
  }
  EXPECT_EQ(pre_of(import(dir, "gpt-2")), "gpt-2");
  // Qwen2's regex without its NFC normalizer is not Qwen2: stored as a pipeline.
  seq["pretokenizers"] = {split(kQwen2), byte_level(false)};
  EXPECT_EQ(pre_of(import(make_dir("qwen2-no-nfc", seq, json()))), "tzero-pipeline");
  // No tokenizer.json at all.
  const std::string bare = make_dir("bare", json(), json());
  EXPECT_NE(error_of(bare).find("no tokenizer.json"), std::string::npos);
  EXPECT_EQ(pre_of(import(bare, "qwen2")), "qwen2");
  EXPECT_NE(error_of(bare, "no-such").find("not a known pre-tokenizer"), std::string::npos);
}

TEST(HfImport, RefusesWhatIsNotByteLevelBpe) {
  const json metaspace = {{"type", "Metaspace"}, {"replacement", "\u2581"}};
  EXPECT_NE(error_of(make_dir("metaspace", metaspace, json()), "gpt-2").find("no ByteLevel"),
            std::string::npos);
  EXPECT_NE(error_of(tzero::test::scratch_dir() + "/no-such-dir").find("not a directory"),
            std::string::npos);
  const std::string dir = make_dir("no-merges", byte_level(true), json());
  std::filesystem::remove(dir + "/merges.txt");
  EXPECT_NE(error_of(dir).find("merges.txt: missing"), std::string::npos);
  tzero::test::write_file(dir + "/merges.txt", "");
  EXPECT_NE(error_of(dir).find("no merges"), std::string::npos);
  tzero::test::write_file(dir + "/tokenizer.json", "{not json");
  EXPECT_NE(error_of(dir).find("not valid JSON"), std::string::npos);
}

TEST(HfImport, AddedTokensSpecialIdsAndConfig) {
  json config = {{"eos_token", {{"content", "<|endoftext|>"}}},
                 {"pad_token", "<|endoftext|>"},
                 {"add_bos_token", false},
                 {"chat_template", "{{ messages }}"}};
  config["added_tokens_decoder"]["259"] = {{"content", "<|im_start|>"}, {"special", true}};
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(kQwen2), byte_level(false)};
  const std::string gguf = import(make_dir("added", seq, kNfc, false, config));
  tzero::GgufFile f(gguf);
  EXPECT_EQ(f.get_string("tokenizer.chat_template"), "{{ messages }}");
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_TRUE(v.warnings().empty());
  EXPECT_EQ(v.n_tokens(), 260);
  EXPECT_EQ(v.eos(), 257);
  EXPECT_EQ(v.pad(), 257);
  EXPECT_EQ(v.bos(), -1);
  EXPECT_EQ(v.type(257), tzero::TokenType::Control);
  EXPECT_EQ(v.type(258), tzero::TokenType::UserDefined);
  EXPECT_EQ(v.type(259), tzero::TokenType::Control);
  EXPECT_EQ(v.tokenize("ab<tool>a", false, false), (Ids{256, 258, 'a'}));
  EXPECT_EQ(v.tokenize("<|im_start|>ab<|endoftext|>", false, true), (Ids{259, 256, 257}));
}

TEST(HfImport, VocabularyFromTokenizerJsonAlone) {
  const std::string dir = tzero::test::scratch_dir() + "/tj-only";
  std::filesystem::create_directories(dir);
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[enc(std::string(1, char(b)))] = b;
  vocab["ab"] = 256;
  vocab[enc(" ") + "ab"] = 257;
  const json tj = {
      {"pre_tokenizer", byte_level(true)},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", json::array({enc(" "), "ab"})}}}}};
  tzero::test::write_file(dir + "/tokenizer.json", tj.dump());
  tzero::GgufFile f(import(dir));
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(v.tokenize("ab ab", false, false), (Ids{256, 257}));
}

TEST(HfImport, Qwen2Directory) {
  TZ_REQUIRE_SHARED(dir, "vocab/qwen2-hf");
  const std::string out = tzero::test::scratch_dir() + "/qwen2-import.gguf";
  const tzero::HfImportSummary s = tzero::import_hf_tokenizer(dir, out, {"qwen2"});
  EXPECT_EQ(s.n_tokens, 151643);
  EXPECT_EQ(s.n_merges, 151387);
  EXPECT_EQ(s.pre, "qwen2");
  tzero::GgufFile f(out);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_TRUE(v.warnings().empty()) << "every merge names tokens of the vocabulary";
  EXPECT_FALSE(v.add_bos());
}

// gpt-oss (o200k) and DeepSeek-V3, spelled as their tokenizer.json files spell them: the real
// characters of DeepSeek-V3's CJK class, its literal CR and LF inside classes, its empty
// normalizer Sequence; gpt-oss's ignore_merges.
TEST(HfImport, RecognizesGptOssAndDeepseekV3) {
  const char* const o200k =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+)"
      R"([\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3})"
      R"(| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(o200k), byte_level(false)};
  EXPECT_EQ(pre_of(import(make_dir("gptoss", seq, json(), /*ignore_merges=*/true))), "gpt-4o");
  // Without ignore_merges it is another pipeline.
  EXPECT_EQ(pre_of(import(make_dir("o200k-merging", seq, json(), false))), "tzero-pipeline");
  const std::string words =
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
      "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
  seq["pretokenizers"] = {split(R"(\p{N}{1,3})"),
                          split("[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+"), split(words.c_str()),
                          byte_level(false)};
  const json empty_sequence = {{"type", "Sequence"}, {"normalizers", json::array()}};
  EXPECT_EQ(pre_of(import(make_dir("dsv3", seq, empty_sequence))), "deepseek-v3");
}

// The steps of an unnamed pipeline run end to end: written by convert, built by the loader.
TEST(HfImport, StoredPipelineTokenizesEndToEnd) {
  const json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       {json{{"type", "Lowercase"}},
        json{{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "ab"}}}}};
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {{{"type", "Split"},
                           {"pattern", {{"String", "b"}}},
                           {"behavior", "MergedWithNext"},
                           {"invert", false}},
                          byte_level(false)};
  const std::string gguf = import(make_dir("stored", seq, normalizer));
  tzero::GgufFile f(gguf);
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(v.pre(), "tzero-pipeline");
  // "AB x" -> "ab ab": "b" joins what follows it, so the words are "a", "b a", "b": no word
  // holds "ab", so no merge applies.
  EXPECT_EQ(v.tokenize("AB x", false, false), (Ids{'a', 'b', ' ', 'a', 'b'}));
  // Without the split step the same text merges: proof that the stored steps are used.
  seq["pretokenizers"] = {byte_level(false)};
  tzero::GgufFile g(import(make_dir("stored-plain", seq, normalizer)));
  EXPECT_EQ(tzero::Vocab::from_gguf(g).tokenize("AB x", false, false), (Ids{256, ' ', 256}));
}

TEST(HfImport, UnsupportedStepIsAnErrorNamingIt) {
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(kQwen2), {{"type", "UnicodeScripts"}}, byte_level(false)};
  const std::string dir = make_dir("unsupported", seq, json());
  EXPECT_EQ(error_of(dir), dir +
                               "/tokenizer.json: pre_tokenizer step 2 'UnicodeScripts' is not "
                               "supported (supported: Split, CharDelimiterSplit, Digits, "
                               "Punctuation, Whitespace, WhitespaceSplit, ByteLevel, Sequence)");
  // --pre overrides what tokenizer.json says, supported or not.
  EXPECT_EQ(pre_of(import(dir, "qwen2")), "qwen2");
  const std::string nd =
      make_dir("unsupported-norm", byte_level(true), {{"type", "BertNormalizer"}});
  EXPECT_NE(error_of(nd).find("normalizer step 1 'BertNormalizer' is not supported"),
            std::string::npos);
}

TEST(HfImport, MalformedOrTruncatedTokenizerJsonIsAnErrorNamingTheFile) {
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(kQwen2), byte_level(false)};
  const std::string dir = make_dir("truncated", seq, kNfc);
  const std::string whole = tzero::test::read_file(dir + "/tokenizer.json");
  std::filesystem::remove(dir + "/vocab.json");  // the vocabulary must come from tokenizer.json
  for (size_t cut : {size_t(0), size_t(1), whole.size() / 3, whole.size() / 2, whole.size() - 1}) {
    tzero::test::write_file(dir + "/tokenizer.json", whole.substr(0, cut));
    const std::string e = error_of(dir);
    EXPECT_NE(e.find(dir + "/tokenizer.json: not valid JSON"), std::string::npos)
        << cut << ": " << e;
  }
  // Valid JSON of the wrong shape.
  for (const char* body : {R"({"model": {"type": "BPE", "vocab": [1, 2]}})",
                           R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})",
                           R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]}})",
                           R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                               "merges": ["a b"]}, "added_tokens": [{"id": "x"}]})",
                           R"([1, 2, 3])", R"({"model": {"type": "Unigram"}})"}) {
    tzero::test::write_file(dir + "/tokenizer.json", body);
    const std::string e = error_of(dir);
    EXPECT_NE(e.find(dir), std::string::npos) << body << ": " << e;
    EXPECT_NE(e, "(no error)") << body;
  }
}

TEST(HfImport, DamagedStoredPipelineIsALoadError) {
  json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = {split(R"(\p{L}+)"), byte_level(false)};
  tzero::GgufFile src(import(make_dir("damaged-pipeline", seq, json())));
  tzero::GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key != "tokenizer.tzero.pipeline") w.add_value(key, value);
  w.add_string("tokenizer.tzero.pipeline", R"({"version": 1, "pre_tokenizer": {"type": "Split")");
  const std::string path = tzero::test::scratch_dir() + "/damaged-pipeline-2.gguf";
  w.write(path);
  tzero::GgufFile f(path);
  try {
    tzero::Vocab::from_gguf(f);
    FAIL() << "no error";
  } catch (const tzero::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(path + ": metadata 'tokenizer.tzero.pipeline': not valid JSON"),
        std::string::npos)
        << e.what();
  }
}
