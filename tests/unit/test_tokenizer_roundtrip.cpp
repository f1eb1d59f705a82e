// decode(encode(text)) == text for whole corpora (tinyshakespeare, 1.1 MB; wikitext-2 test
// with CRLF line ends, 1.3 MB) with each vocabulary: llama-spm, gpt-2, qwen2 (both corpora are
// NFC, so Qwen2's normalization changes nothing). Prints sizes and times.
#include <gtest/gtest.h>

#include <chrono>

#include "format/gguf.h"
#include "support/test_support.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace {

struct Corpus {
  const char* name;
  const char* path;
};
const Corpus kCorpora[] = {{"tinyshakespeare", "text/tinyshakespeare.txt"},
                           {"wikitext", "text/wikitext-2-raw-test.hf-nonempty-crlf.txt"}};

// Where two strings first differ, with some context, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const size_t from = i < 20 ? 0 : i - 20;
  return "first difference at byte " + std::to_string(i) + ": \"" + a.substr(from, 60) +
         "\" vs \"" + b.substr(from, 60) + "\"";
}

void round_trip(const std::string& vocab_path, const char* vocab_name) {
  tzero::GgufFile f(vocab_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(f);
  for (const Corpus& c : kCorpora) {
    const std::string path = tzero::test::shared_data(c.path);
    if (path.empty()) {
      std::printf("shared data absent: ../shared/data/%s (skipped)\n", c.path);
      continue;
    }
    const std::string text = tzero::test::read_file(path);
    ASSERT_TRUE(tzero::unicode::is_valid(text));
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = vocab.tokenize(text, /*add_special=*/true, false);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string back = vocab.detokenize(ids);
    const auto t2 = std::chrono::steady_clock::now();
    const bool same = back == text;
    EXPECT_TRUE(same) << vocab_name << " on " << c.name << ": " << first_difference(back, text);
    const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::printf(
        "round trip %-9s %-15s %zu bytes -> %zu tokens: %s (encode %.0f ms, decode %.0f "
        "ms)\n",
        vocab_name, c.name, text.size(), ids.size(), same ? "identical" : "DIFFERENT", ms(t1 - t0),
        ms(t2 - t1));
  }
}

}  // namespace

TEST(TokenizerRoundTrip, LlamaSpm) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  round_trip(vocab, "llama-spm");
}

TEST(TokenizerRoundTrip, Gpt2) {
  TZ_REQUIRE_SHARED(vocab, "vocab/ggml-vocab-gpt-2.gguf");
  round_trip(vocab, "gpt-2");
}

TEST(TokenizerRoundTrip, Qwen2) {
  TZ_REQUIRE_SHARED(dir, "vocab/qwen2-hf");
  const std::string path = tzero::test::scratch_dir() + "/qwen2-roundtrip.gguf";
  tzero::import_hf_tokenizer(dir, path, {"qwen2"});
  round_trip(path, "qwen2");
}
