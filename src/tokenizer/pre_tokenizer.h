// Pre-tokenizers of byte-level BPE: how the text is cut into words before merges are applied,
// chosen by tokenizer.ggml.pre. Each one is written as the Hugging Face `tokenizers` steps of
// the original tokenizer.json (Split with a regular expression, Digits, Punctuation,
// ByteLevel), in order, with the original regular expressions; docs/TOKENIZERS.md lists them
// and where they come from.
//
// Every step cuts each current piece with "Isolated" behaviour: the matches and the text
// between them become pieces of their own, and a regular expression sees one piece at a time
// (a look-ahead never looks past the end of the piece). ByteLevel with use_regex first cuts
// with the GPT-2 expression; then (with or without use_regex) the pieces are rewritten in the
// byte-level alphabet (tokenizer/byte_level.h), and any later step sees them in that form, as
// it does in the original. Regular expressions run on PCRE2 with UTF and UCP (JIT when the
// library has it); `\s` is widened to Unicode White_Space (PCRE2 leaves out U+0085).
//
// Ill-formed UTF-8 never matches a character class: each ill-formed byte ends up in a piece
// between matches, and so in a word of its own (through its byte-level character), which keeps
// encoding lossless.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tzero {

struct PreStep {
  enum class Kind { Split, Digits, Punctuation, ByteLevel };
  Kind kind = Kind::Split;
  std::string regex;  // Split: the pattern, as written in tokenizer.json
  bool flag = false;  // Digits: individual_digits; ByteLevel: use_regex
  bool operator==(const PreStep&) const = default;
};

struct PreTokenizerSpec {
  std::string name;                  // the canonical tokenizer.ggml.pre value
  std::vector<std::string> aliases;  // other tokenizer.ggml.pre values meaning the same
  std::vector<PreStep> steps;        // contains exactly one ByteLevel step
  bool nfc = false;                  // the original's normalizer is NFC
  bool ignore_merges = false;        // a word that is a token is taken whole (Llama 3)
  bool add_bos = false;              // default of tokenizer.ggml.add_bos_token
};

// All known pre-tokenizers, "gpt-2" first.
const std::vector<PreTokenizerSpec>& pre_tokenizer_specs();
// The spec whose name or alias is `name`, or nullptr.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// The GPT-2 expression (what ByteLevel with use_regex cuts with).
extern const char* const kGpt2Regex;

class PreTokenizer {
 public:
  // Compiles the steps' expressions. Throws tzero::Error naming the expression when PCRE2
  // rejects one.
  explicit PreTokenizer(const PreTokenizerSpec& spec);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  const PreTokenizerSpec& spec() const { return spec_; }

  // Cuts `text` (already normalized) into words in the byte-level alphabet, appended to
  // `words_out` back to back with their end offsets in `ends_out`. Safe to call from several
  // threads at once.
  void split(std::string_view text, std::string& words_out, std::vector<size_t>& ends_out) const;

  // The words of `text` as raw bytes (byte-level decoded): for tests and tools.
  std::vector<std::string> words(std::string_view text) const;

 private:
  struct Stage;
  PreTokenizerSpec spec_;
  std::vector<std::unique_ptr<Stage>> raw_stages_;   // before the byte-level rewrite
  std::vector<std::unique_ptr<Stage>> byte_stages_;  // after it
};

// `pattern` with \s and \S replaced by classes of Unicode White_Space (what the original
// regex engines mean by \s). Throws tzero::Error for \S inside a character class.
std::string widen_whitespace_escapes(std::string_view pattern);

}  // namespace tzero
