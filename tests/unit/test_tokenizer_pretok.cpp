// The byte-level BPE pre-tokenizers on tricky inputs. Expected words are derived by hand from
// the original expressions' semantics (leftmost alternative that matches, greedy quantifiers
// with backtracking, Unicode \s / \p{L} / \p{N}); the comments give the reasoning.
#include <gtest/gtest.h>

#include "base/error.h"
#include "tokenizer/pre_tokenizer.h"

namespace {

using Words = std::vector<std::string>;

Words split(const char* pre, const std::string& text) {
  const tzero::PreTokenizerSpec* spec = tzero::find_pre_tokenizer(pre);
  EXPECT_NE(spec, nullptr) << pre;
  if (!spec) return {};
  const tzero::PreTokenizer p(*spec);
  return p.words(text);
}

}  // namespace

TEST(PreTokenizer, KnownNamesAndAliases) {
  for (const char* name :
       {"gpt-2", "default", "phi-2", "mpt", "llama-bpe", "llama3", "qwen2", "deepseek-llm",
        "deepseek-coder", "falcon", "starcoder", "refact", "gpt-4o", "deepseek-v3"})
    EXPECT_NE(tzero::find_pre_tokenizer(name), nullptr) << name;
  EXPECT_EQ(tzero::find_pre_tokenizer("phi-2")->name, "gpt-2");
  EXPECT_EQ(tzero::find_pre_tokenizer("refact")->name, "starcoder");
  EXPECT_EQ(tzero::find_pre_tokenizer("no-such"), nullptr);
  const std::vector<tzero::NormStep> nfc = {{tzero::NormStep::Kind::NFC, "", "", false, false}};
  EXPECT_EQ(tzero::find_pre_tokenizer("qwen2")->normalizers, nfc);
  EXPECT_EQ(tzero::find_pre_tokenizer("mpt")->normalizers, nfc);
  EXPECT_TRUE(tzero::find_pre_tokenizer("gpt-2")->normalizers.empty());
  EXPECT_TRUE(tzero::find_pre_tokenizer("gpt-4o")->ignore_merges);
  EXPECT_TRUE(tzero::find_pre_tokenizer("deepseek-v3")->normalizers.empty());
  EXPECT_TRUE(tzero::find_pre_tokenizer("llama-bpe")->ignore_merges);
  // Every expression compiles.
  for (const auto& spec : tzero::pre_tokenizer_specs())
    EXPECT_NO_THROW(tzero::PreTokenizer p(spec));
}

TEST(PreTokenizer, WhitespaceEscapesAreUnicodeWhiteSpace) {
  EXPECT_EQ(tzero::widen_whitespace_escapes(R"(\s+(?!\S)|[^\s\p{L}])"),
            R"([\x{09}-\x{0D}\x{85}\p{Z}]+(?![^\x{09}-\x{0D}\x{85}\p{Z}])|)"
            R"([^\x{09}-\x{0D}\x{85}\p{Z}\p{L}])");
  EXPECT_EQ(tzero::widen_whitespace_escapes(R"(\\s[\]s]\p{N})"), R"(\\s[\]s]\p{N})");
  EXPECT_THROW(tzero::widen_whitespace_escapes(R"([\S])"), tzero::Error);
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Words{"Hello", " world"}));
  // Contractions are case-sensitive: "'T" is not one; the apostrophe is punctuation.
  EXPECT_EQ(split("gpt-2", "I'm can't DON'T"), (Words{"I", "'m", " can", "'t", " DON", "'", "T"}));
  // Digit runs stay whole, with one leading space.
  EXPECT_EQ(split("gpt-2", "12345 67"), (Words{"12345", " 67"}));
  // A whitespace run gives its last space to the next word (\s+(?!\S) backtracks).
  EXPECT_EQ(split("gpt-2", "a   b"), (Words{"a", "  ", " b"}));
  EXPECT_EQ(split("gpt-2", "a \n\n b"), (Words{"a", " \n\n", " b"}));
  // \r\n before a word: \s+(?!\S) can take only "\r"; "\n" is then \s+.
  EXPECT_EQ(split("gpt-2", "line1\r\nline2"), (Words{"line", "1", "\r", "\n", "line", "2"}));
  EXPECT_EQ(split("gpt-2", "trailing  "), (Words{"trailing", "  "}));
  // Letters of any script, emoji as punctuation-like symbols.
  EXPECT_EQ(split("gpt-2", "中文 🦙🦙!"), (Words{"中文", " 🦙🦙!"}));
  // U+0085 (NEL) is whitespace for the original engines (PCRE2 alone would call it a symbol
  // and keep the two together).
  EXPECT_EQ(split("gpt-2", "\u0085\u0085x"), (Words{"\u0085", "\u0085", "x"}));
  // Ill-formed UTF-8 matches nothing: each such stretch is a word.
  EXPECT_EQ(split("gpt-2",
                  "ab\xff"
                  "cd \xC3"),
            (Words{"ab", "\xff", "cd", " ", "\xC3"}));
}

TEST(PreTokenizer, Llama3) {
  // Contractions in any case; letters take one leading non-letter, non-digit character.
  EXPECT_EQ(split("llama-bpe", "DON'T it's"), (Words{"DON", "'T", " it", "'s"}));
  // Unicode case folding: U+017F (long s) folds to 's'.
  EXPECT_EQ(split("llama-bpe", "it'\u017F"), (Words{"it", "'\u017F"}));
  EXPECT_EQ(split("llama-bpe", "Hello, world!"), (Words{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("llama-bpe", "(hello)"), (Words{"(hello", ")"}));
  // Digits in groups of at most three, with no leading space.
  EXPECT_EQ(split("llama-bpe", "1234567 89"), (Words{"123", "456", "7", " ", "89"}));
  // \s*[\r\n]+ keeps a CRLF together; a whitespace run ending in newlines is one word.
  EXPECT_EQ(split("llama-bpe", "line1\r\nline2"), (Words{"line", "1", "\r\n", "line", "2"}));
  EXPECT_EQ(split("llama-bpe", "a  \n\n  b"), (Words{"a", "  \n\n", " ", " b"}));
  // Punctuation takes trailing newlines.
  EXPECT_EQ(split("llama-bpe", "end.\n\nNext"), (Words{"end", ".\n\n", "Next"}));
  EXPECT_EQ(split("llama-bpe", "你好世界 🦙🦙 ok"),
            (Words{"你好世界", " 🦙🦙", " ok"}));
}

TEST(PreTokenizer, Qwen2) {
  EXPECT_EQ(split("qwen2", "2024 x"), (Words{"2", "0", "2", "4", " x"}));
  EXPECT_EQ(split("qwen2", "WE'LL"), (Words{"WE", "'LL"}));
  EXPECT_EQ(split("qwen2", "\t\tif x:\r\n"), (Words{"\t", "\tif", " x", ":\r\n"}));
}

TEST(PreTokenizer, DeepseekCoder) {
  // [\r\n], \s?\p{L}+, \s?\p{P}+, CJK, then single digits.
  EXPECT_EQ(split("deepseek-coder", "foo123 bar"), (Words{"foo", "1", "2", "3", " bar"}));
  EXPECT_EQ(split("deepseek-coder", "a\r\nb"), (Words{"a", "\r", "\n", "b"}));
  EXPECT_EQ(split("deepseek-coder", "x = (y);"), (Words{"x", " =", " (", "y", ");"}));
}

TEST(PreTokenizer, DeepseekLlm) {
  // "Hello" (letter class); ", 世界 123!" has no such letter: punctuation cuts "," and "!";
  // then the CJK class cuts "世界"; digits go one by one.
  EXPECT_EQ(split("deepseek-llm", "Hello, 世界 123!"),
            (Words{"Hello", ",", " ", "世界", " ", "1", "2", "3", "!"}));
  // \s+$ isolates trailing whitespace; the letter class takes one leading space.
  EXPECT_EQ(split("deepseek-llm", "ab  "), (Words{"ab", "  "}));
  EXPECT_EQ(split("deepseek-llm", "Ωμέγα Ωμέγα"), (Words{"Ωμέγα", " Ωμέγα"}));
  // The "CJK" class includes U+0800..U+4E00, so it cuts letters such as U+1F7D and U+2126
  // out of their letter-class word again.
  EXPECT_EQ(split("deepseek-llm", "a \u1F7D \u2126"), (Words{"a", " ", "\u1F7D", " ", "\u2126"}));
}

TEST(PreTokenizer, Falcon) {
  // Punctuation first; then GPT-2's expression; then, on byte-level text, digit runs and
  // groups of three ASCII digits.
  EXPECT_EQ(split("falcon", "Hello, world 12345!"),
            (Words{"Hello", ",", " world", " ", "123", "45", "!"}));
  EXPECT_EQ(split("falcon", "a$b"), (Words{"a", "$", "b"}));
  // 'м' is D0 BC; BC's byte-level character is '¼', a number: the digit step cuts inside it,
  // as Hugging Face's falcon tokenizer does.
  EXPECT_EQ(split("falcon", "\u043C"), (Words{"\xD0", "\xBC"}));
}

TEST(PreTokenizer, Starcoder) {
  EXPECT_EQ(split("starcoder", "abc123 12"), (Words{"abc", "1", "2", "3", " ", "1", "2"}));
}
