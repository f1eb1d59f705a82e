// SentencePiece-style tokenizer conformance: llama.cpp's test-tokenizer-0 suite for the
// Llama 2 vocabulary (ids from Hugging Face's tokenizer, no BOS), case by case.
#include <gtest/gtest.h>

#include <algorithm>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"
#include "unit/test_tokenizer_suite.h"

TEST(TokenizerSpm, LlamaSpmSuiteCaseByCase) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-llama-spm.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-llama-spm.gguf.out");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(tzero::test::run_suite(vocab, inp, out, "llama-spm"), 46);
}

TEST(TokenizerSpm, AddsBosAndParsesSpecialOnlyWhenAsked) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  EXPECT_EQ(vocab.bos(), 1);
  EXPECT_EQ(vocab.eos(), 2);
  EXPECT_EQ(vocab.tokenize("Hello", true, false), (std::vector<int32_t>{1, 15043}));
  EXPECT_TRUE(vocab.tokenize("", false, false).empty());
  EXPECT_EQ(vocab.tokenize("", true, false), (std::vector<int32_t>{1}));
  // "</s>" is the EOS control token only with parse_special; otherwise it is plain text.
  const auto plain = vocab.tokenize("a</s>", false, false);
  const auto special = vocab.tokenize("a</s>", false, true);
  EXPECT_EQ(special.back(), 2);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
}

TEST(TokenizerSpm, DetokenizeRoundTripsText) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  for (std::string text : {"Hello world", "ied 4 ½ months", "  two leading", "tabs\tand\nnewlines",
                           "emoji 🦙 and 中文"}) {
    std::string back;
    for (int32_t id : vocab.tokenize(text, false, false)) back += vocab.token_to_piece(id);
    ASSERT_FALSE(back.empty());
    EXPECT_EQ(back.substr(1), text) << "the SentencePiece prefix space is the only addition";
  }
}

TEST(TokenizerSpm, DetokenizeRemovesOnlyThePrefixSpace) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  for (std::string text : {"Hello world", " Hello", "  two leading", "\nnewline first", "",
                           "emoji 🦙 and 中文 \xff\xfe bytes"}) {
    EXPECT_EQ(vocab.detokenize(vocab.tokenize(text, true, false)), text);
    EXPECT_EQ(vocab.detokenize(vocab.tokenize(text, false, false)), text);
  }
  // With special tokens parsed, the text after one gets a prefix space that decoding removes.
  const std::string text = "a</s> b<s>c";
  EXPECT_EQ(vocab.detokenize(vocab.tokenize(text, false, true), /*special=*/true), text);
  EXPECT_EQ(vocab.detokenize(vocab.tokenize(text, false, true)), "a bc");
}

// Cutting the text into words before merging (spm.cpp) must give the ids of merging the whole
// text at once. One extra token "\x01▁" (a "▁" after another character; \x01 is in neither
// corpus, so it can never be formed) turns the cutting off; the ids must not change.
TEST(TokenizerSpm, WordCuttingChangesNothing) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  TZ_REQUIRE_SHARED(shakespeare, "text/tinyshakespeare.txt");
  TZ_REQUIRE_SHARED(wikitext, "text/wikitext-2-raw-test.hf-nonempty-crlf.txt");
  tzero::GgufFile src(vocab_path);
  std::vector<std::string> tokens;
  for (auto t : src.get_string_array("tokenizer.ggml.tokens")) tokens.emplace_back(t);
  std::vector<float> scores = src.get_f32_array("tokenizer.ggml.scores");
  std::vector<int32_t> types;
  for (int64_t t : src.get_int_array("tokenizer.ggml.token_type")) types.push_back(int32_t(t));
  tokens.push_back("\x01\xE2\x96\x81");
  scores.push_back(0.0f);
  types.push_back(1);
  tzero::GgufWriter w;
  for (const auto& [key, value] : src.metadata())
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.ggml.tokens" &&
        key != "tokenizer.ggml.scores" && key != "tokenizer.ggml.token_type")
      w.add_value(key, value);
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", scores);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  const std::string path = tzero::test::scratch_dir() + "/llama-spm-uncut.gguf";
  w.write(path);
  tzero::GgufFile f(path);
  const tzero::Vocab cut = tzero::Vocab::from_gguf(src), whole = tzero::Vocab::from_gguf(f);
  for (const std::string& file : {shakespeare, wikitext}) {
    const std::string text = tzero::test::read_file(file).substr(0, 300000);
    ASSERT_EQ(text.find('\x01'), std::string::npos);
    EXPECT_EQ(cut.tokenize(text, true, false), whole.tokenize(text, true, false)) << file;
  }
}
