// Byte-level BPE (tokenizer.ggml.model = "gpt2"): llama.cpp's test-tokenizer-0 suites for GPT-2
// and Qwen2 (ids from Hugging Face's tokenizers, no BOS), case by case; merge order, added and
// control tokens, BOS/EOS flags, unknown pre-tokenizers, decoding.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"
#include "unit/test_tokenizer_suite.h"

namespace {

using tzero::test::run_suite;
using Ids = std::vector<int32_t>;

// The Qwen2 vocabulary imported once per process from ../shared/data/vocab/qwen2-hf.
std::string qwen2_gguf() {
  static const std::string path = [] {
    const std::string dir = tzero::test::shared_data("vocab/qwen2-hf");
    if (dir.empty()) return std::string();
    const std::string p = tzero::test::scratch_dir() + "/qwen2-unit.gguf";
    tzero::import_hf_tokenizer(dir, p, {"qwen2"});
    return p;
  }();
  return path;
}

std::string scratch(const std::string& name) {
  return tzero::test::scratch_dir() + "/" + name;
}

Ids ids_of(const tzero::Vocab& v, const std::string& text) {
  return v.tokenize(text, false, false);
}

}  // namespace

TEST(TokenizerBpe, Gpt2SuiteCaseByCase) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-gpt-2.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-gpt-2.gguf.out");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(vocab.kind(), tzero::Vocab::Kind::Bpe);
  EXPECT_EQ(vocab.pre(), "gpt-2");
  EXPECT_TRUE(vocab.warnings().empty());
  EXPECT_EQ(run_suite(vocab, inp, out, "gpt-2"), 46);
}

TEST(TokenizerBpe, Qwen2SuiteCaseByCase) {
  TZ_REQUIRE_SHARED(dir, "vocab/qwen2-hf/vocab.json");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-qwen2.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-qwen2.gguf.out");
  tzero::GgufFile f(qwen2_gguf());
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(vocab.pre(), "qwen2");
  EXPECT_EQ(vocab.n_tokens(), 151643);
  EXPECT_EQ(run_suite(vocab, inp, out, "qwen2"), 46);
}

TEST(TokenizerBpe, Gpt2SpecialsAndFlags) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(vocab.bos(), 50256);
  EXPECT_EQ(vocab.eos(), 50256);
  EXPECT_FALSE(vocab.add_bos()) << "GPT-2 adds no BOS unless the metadata says so";
  EXPECT_FALSE(vocab.add_space_prefix());
  EXPECT_EQ(vocab.tokenize("Hello", true, false), (Ids{15496}));
  // <|endoftext|> is a control token: matched only with parse_special.
  EXPECT_EQ(vocab.type(50256), tzero::TokenType::Control);
  const Ids special = vocab.tokenize("Hi<|endoftext|>Hi", false, true);
  EXPECT_EQ(special, (Ids{17250, 50256, 17250}));
  const Ids plain = vocab.tokenize("Hi<|endoftext|>Hi", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(vocab.detokenize(plain), "Hi<|endoftext|>Hi");
  EXPECT_EQ(vocab.detokenize(special), "HiHi") << "control tokens decode to nothing by default";
  EXPECT_EQ(vocab.detokenize(special, true), "Hi<|endoftext|>Hi");
}

TEST(TokenizerBpe, AddBosAndEosFromMetadata) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile src(vocab_path);
  tzero::GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.add_value(key, value);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_eos_token", true);
  const std::string path = scratch("gpt2-bos-eos.gguf");
  w.write(path);
  tzero::GgufFile f(path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(vocab.tokenize("Hello", true, false), (Ids{50256, 15496, 50256}));
  EXPECT_EQ(vocab.tokenize("Hello", false, false), (Ids{15496}));
}

TEST(TokenizerBpe, UnknownPreWarnsAndUsesTheDefault) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile src(vocab_path);
  const tzero::Vocab reference = tzero::Vocab::from_gguf(src);
  for (const std::string pre : {"no-such-pre", ""}) {
    tzero::GgufWriter w;
    for (const auto& [key, value] : src.metadata())
      if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.pre") w.add_value(key, value);
    if (!pre.empty()) w.add_string("tokenizer.ggml.pre", pre);
    const std::string path = scratch("gpt2-pre-" + pre + ".gguf");
    w.write(path);
    tzero::GgufFile f(path);
    testing::internal::CaptureStderr();
    const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(vocab.pre(), "gpt-2");
    ASSERT_EQ(vocab.warnings().size(), 1u);
    const std::string expected =
        pre.empty() ? "no pre-tokenizer given" : "unknown pre-tokenizer 'no-such-pre'";
    EXPECT_NE(vocab.warnings()[0].find(expected), std::string::npos) << vocab.warnings()[0];
    EXPECT_NE(err.find("warning: "), std::string::npos) << err;
    EXPECT_NE(err.find(expected), std::string::npos) << err;
    const std::string text = "Hello world, it's 2024!  \n\tok";
    EXPECT_EQ(ids_of(vocab, text), ids_of(reference, text));
  }
}

TEST(TokenizerBpe, MissingMergesIsAnError) {
  tzero::GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "gpt-2");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  const std::string path = scratch("no-merges.gguf");
  w.write(path);
  tzero::GgufFile f(path);
  try {
    tzero::Vocab::from_gguf(f);
    FAIL() << "expected an error";
  } catch (const tzero::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no merges"), std::string::npos) << e.what();
  }
}

// Merges apply lowest rank first; equal pairs from the left.
TEST(TokenizerBpe, MergesApplyInRankOrder) {
  const int ab = 256, bc = 257, aa = 258;
  {
    tzero::GgufFile f(tzero::test::write_byte_level_vocab(
        scratch("rank1.gguf"), {"ab", "bc", "aa"}, {{"b", "c"}, {"a", "b"}, {"a", "a"}}, "gpt-2"));
    const tzero::Vocab v = tzero::Vocab::from_gguf(f);
    EXPECT_EQ(ids_of(v, "abc"), (Ids{'a', bc}));
    EXPECT_EQ(ids_of(v, "aaa"), (Ids{aa, 'a'})) << "ties: the leftmost pair first";
    EXPECT_EQ(ids_of(v, "aaaa"), (Ids{aa, aa}));
  }
  {
    tzero::GgufFile f(tzero::test::write_byte_level_vocab(scratch("rank2.gguf"), {"ab", "bc", "aa"},
                                                          {{"a", "b"}, {"b", "c"}}, "gpt-2"));
    const tzero::Vocab v = tzero::Vocab::from_gguf(f);
    EXPECT_EQ(ids_of(v, "abc"), (Ids{ab, 'c'}));
    EXPECT_EQ(ids_of(v, "aaa"), (Ids{'a', 'a', 'a'})) << "a token without a merge is not used";
  }
}

// Llama 3 (ignore_merges): a word that is a token is taken whole even when no merges build it.
TEST(TokenizerBpe, LlamaBpeTakesWholeWordTokens) {
  const std::vector<std::string> extra = {"ab", "abc"};
  const std::vector<std::pair<std::string, std::string>> merges = {{"a", "b"}};
  tzero::GgufFile f1(
      tzero::test::write_byte_level_vocab(scratch("im1.gguf"), extra, merges, "gpt-2"));
  tzero::GgufFile f2(
      tzero::test::write_byte_level_vocab(scratch("im2.gguf"), extra, merges, "llama-bpe"));
  const tzero::Vocab gpt2 = tzero::Vocab::from_gguf(f1), llama3 = tzero::Vocab::from_gguf(f2);
  EXPECT_EQ(ids_of(gpt2, "abc"), (Ids{256, 'c'}));
  EXPECT_EQ(ids_of(llama3, "abc"), (Ids{257}));
  EXPECT_EQ(ids_of(llama3, "abcd"), (Ids{256, 'c', 'd'}));
}

// Added (user-defined) tokens are cut out before BPE, always; control tokens only on request.
TEST(TokenizerBpe, UserDefinedTokensMatchBeforeBpe) {
  const std::string path = scratch("added.gguf");
  const std::vector<std::pair<std::string, std::string>> merges = {{"x", "y"}};  // id 256
  tzero::test::write_byte_level_vocab(path, {"xy"}, merges, "gpt-2", {"<tool>", "   "}, /*User*/ 4);
  tzero::GgufFile f(path);
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  const int tool = 257, spaces = 258;
  EXPECT_EQ(ids_of(v, "x<tool>y"), (Ids{'x', tool, 'y'}));
  EXPECT_EQ(ids_of(v, "a    b"), (Ids{'a', spaces, ' ', 'b'})) << "longest first, at the left";
  EXPECT_EQ(v.detokenize(ids_of(v, "x<tool>y  <tool>")), "x<tool>y  <tool>");

  const std::string path2 = scratch("control.gguf");
  tzero::test::write_byte_level_vocab(path2, {"xy"}, merges, "gpt-2", {"<ctl>", "<ctl>x"}, 3);
  tzero::GgufFile f2(path2);
  const tzero::Vocab v2 = tzero::Vocab::from_gguf(f2);
  EXPECT_EQ(v2.tokenize("a<ctl>xb<ctl>", false, true), (Ids{'a', 258, 'b', 257}));
  EXPECT_EQ(v2.tokenize("xy<ctl>xy", false, true), (Ids{256, 258, 'y'})) << "leftmost, longest";
  EXPECT_EQ(v2.tokenize("xy<ctl> xy", false, true), (Ids{256, 257, ' ', 256}));
  EXPECT_EQ(v2.tokenize("<ctl>", false, false).size(), 5u);
}

// NFC where the original normalizes (Qwen2), not elsewhere (GPT-2).
TEST(TokenizerBpe, Qwen2NormalizesToNfc) {
  TZ_REQUIRE_SHARED(gpt2_path, "vocab/ggml-vocab-gpt-2.gguf");
  TZ_REQUIRE_SHARED(dir, "vocab/qwen2-hf/vocab.json");
  tzero::GgufFile fq(qwen2_gguf()), fg(gpt2_path);
  const tzero::Vocab qwen2 = tzero::Vocab::from_gguf(fq), gpt2 = tzero::Vocab::from_gguf(fg);
  const std::string composed = "caf\xC3\xA9", decomposed = "cafe\xCC\x81";  // é, e + U+0301
  EXPECT_EQ(ids_of(qwen2, decomposed), ids_of(qwen2, composed));
  EXPECT_NE(ids_of(gpt2, decomposed), ids_of(gpt2, composed));
  EXPECT_EQ(qwen2.detokenize(ids_of(qwen2, decomposed)), composed);
}

// Decoding gives back every byte, ill-formed UTF-8 included (each such byte is a word).
TEST(TokenizerBpe, DetokenizeRoundTripsAnyBytes) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += char(b);
  for (const std::string& text :
       {std::string("Hello world"), std::string(" leading"), std::string("tabs\tand\r\nCRLF"),
        std::string("emoji 🦙 and 中文"), std::string("bad \xff\xfe utf8 \xC3"),
        std::string("\xE2\x82"), all_bytes, std::string()}) {
    EXPECT_EQ(vocab.detokenize(vocab.tokenize(text, false, false)), text);
  }
  EXPECT_EQ(vocab.token_to_piece(15496), "Hello");
  EXPECT_EQ(vocab.token_to_piece(995), " world");
}

// Byte-level BPE is lossless under every pre-tokenizer: random strings built from awkward
// pieces (combining marks, CJK, emoji, CR/LF, NEL, U+2028, ill-formed bytes, a special token)
// decode to themselves (to their NFC form where the pre-tokenizer normalizes).
TEST(TokenizerBpe, RandomTextRoundTripsUnderEveryPreTokenizer) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  tzero::GgufFile src(vocab_path);
  const char* const pieces[] = {"a",
                                "Zq",
                                " ",
                                "  ",
                                "\n",
                                "\r\n",
                                "\t",
                                "7",
                                "'s",
                                "'LL",
                                "\xC3\xA9",
                                "e\xCC\x81",
                                "\xE4\xB8\xAD",
                                "\xF0\x9F\xA6\x99",
                                "\xFF",
                                "\xC3",
                                "\xC2\x85",
                                "\xE2\x80\xA8",
                                ",",
                                "!!",
                                "\xC2\xBD",
                                "<|endoftext|>"};
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  };
  std::vector<std::string> texts;
  for (int i = 0; i < 150; ++i) {
    std::string t;
    const uint32_t n = next() % 24;
    for (uint32_t k = 0; k < n; ++k) t += pieces[next() % std::size(pieces)];
    texts.push_back(t);
  }
  for (const auto& spec : tzero::pre_tokenizer_specs()) {
    tzero::GgufWriter w;
    for (const auto& [key, value] : src.metadata())
      if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.pre") w.add_value(key, value);
    w.add_string("tokenizer.ggml.pre", spec.name);
    const std::string path = scratch("gpt2-as-" + spec.name + ".gguf");
    w.write(path);
    tzero::GgufFile f(path);
    const tzero::Vocab v = tzero::Vocab::from_gguf(f);
    for (const std::string& t : texts) {
      std::string expected;
      if (!spec.normalizers.empty())
        tzero::unicode::append_nfc(t, expected);
      else
        expected = t;
      EXPECT_EQ(v.detokenize(v.tokenize(t, false, false)), expected) << spec.name;
      EXPECT_EQ(v.detokenize(v.tokenize(t, false, true), true), expected) << spec.name;
    }
  }
}

// Converters write 0xFFFFFFFF (or -1) for "no such token"; other ids outside the vocabulary are
// ignored with a warning (llama.cpp does the same), not an error.
TEST(TokenizerBpe, SpecialIdsOutsideTheVocabularyAreIgnored) {
  tzero::GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "gpt-2");
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.add_string_array("tokenizer.ggml.merges", {"a b"});
  w.add_u32("tokenizer.ggml.bos_token_id", 2);
  w.add_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.add_i32("tokenizer.ggml.eos_token_id", -1);
  w.add_u32("tokenizer.ggml.eot_token_id", 3);
  const std::string path = scratch("odd-ids.gguf");
  w.write(path);
  tzero::GgufFile f(path);
  testing::internal::CaptureStderr();
  const tzero::Vocab v = tzero::Vocab::from_gguf(f);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.bos(), 2);
  EXPECT_EQ(v.pad(), -1);
  EXPECT_EQ(v.eos(), -1);
  EXPECT_EQ(v.eot(), -1);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("'tokenizer.ggml.eot_token_id' = 3 is not a token id"),
            std::string::npos);
  EXPECT_EQ(ids_of(v, "ab"), (Ids{2}));
}
