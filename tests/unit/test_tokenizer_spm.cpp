// SentencePiece-style tokenizer conformance: llama.cpp's test-tokenizer-0 suite for the
// Llama 2 vocabulary (ids from Hugging Face's tokenizer, no BOS), case by case.
#include <gtest/gtest.h>

#include <sstream>

#include "format/gguf.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace {

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: cases separated by "\n__ggml_vocab_test__\n" (the last one terminated by it);
// .out: one line of space-separated ids per case.
std::vector<Case> load_suite(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = tz::test::read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream out(tz::test::read_file(out_path));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(out, line)) break;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) c.ids.push_back(id);
  }
  return cases;
}

}  // namespace

TEST(TokenizerSpm, LlamaSpmSuiteCaseByCase) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  TZ_REQUIRE_SHARED(inp, "vocab/ggml-vocab-llama-spm.gguf.inp");
  TZ_REQUIRE_SHARED(out, "vocab/ggml-vocab-llama-spm.gguf.out");
  tz::GgufFile f(vocab_path);
  const tz::Vocab vocab = tz::Vocab::from_gguf(f);
  const auto cases = load_suite(inp, out);
  ASSERT_EQ(cases.size(), 46u) << "the suite has 46 cases";
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = vocab.tokenize(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(got, cases[i].ids) << "case " << i << ": \"" << cases[i].text << "\"";
    passed += got == cases[i].ids;
  }
  std::printf("llama-spm tokenizer suite: %d/%zu cases passed\n", passed, cases.size());
}

TEST(TokenizerSpm, AddsBosAndParsesSpecialOnlyWhenAsked) {
  TZ_REQUIRE_SHARED(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  tz::GgufFile f(vocab_path);
  const tz::Vocab vocab = tz::Vocab::from_gguf(f);
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
  tz::GgufFile f(vocab_path);
  const tz::Vocab vocab = tz::Vocab::from_gguf(f);
  for (std::string text : {"Hello world", "ied 4 ½ months", "  two leading", "tabs\tand\nnewlines",
                           "emoji 🦙 and 中文"}) {
    std::string back;
    for (int32_t id : vocab.tokenize(text, false, false)) back += vocab.token_to_piece(id);
    ASSERT_FALSE(back.empty());
    EXPECT_EQ(back.substr(1), text) << "the SentencePiece prefix space is the only addition";
  }
}
