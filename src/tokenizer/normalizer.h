// Normalizers: what Hugging Face `tokenizers` does to the text before pre-tokenization
// (tokenizer.json "normalizer"), as an ordered list of steps. Supported: NFC, NFD, NFKC, NFKD
// (utf8proc), Lowercase (per code point, Unicode lowercase mapping: U+0130 becomes "i" and
// U+0307 as in Rust's char::to_lowercase), Strip (leading / trailing Unicode White_Space),
// Prepend (a text before any non-empty text) and Replace (every non-overlapping match of a
// literal or a regular expression, left to right, by a literal text). Hugging Face runs the
// normalizer on each piece of text between added tokens; so does tzero (Vocab::tokenize calls
// the BPE model once per such piece).
//
// Ill-formed UTF-8 is kept byte for byte: Unicode forms and Lowercase leave ill-formed bytes in
// place and work on the well-formed runs between them; a regular expression never matches them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tzero {

struct NormStep {
  enum class Kind { NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace };
  Kind kind = Kind::NFC;
  std::string pattern;  // Replace: a PCRE2 expression (a literal String pattern, escaped)
  std::string content;  // Replace: the replacement text; Prepend: the text put in front
  bool left = false, right = false;  // Strip: which ends
  bool operator==(const NormStep&) const = default;
};

// The tokenizer.json type name of a step ("NFC", "Replace", ...).
const char* norm_step_name(NormStep::Kind kind);

class Normalizer {
 public:
  // Compiles the Replace expressions. Throws tzero::Error naming the expression when PCRE2
  // rejects one.
  explicit Normalizer(const std::vector<NormStep>& steps);
  ~Normalizer();
  Normalizer(const Normalizer&) = delete;
  Normalizer& operator=(const Normalizer&) = delete;

  bool empty() const { return steps_.empty(); }

  // The normalized form of `text`. Safe to call from several threads at once.
  std::string normalize(std::string_view text) const;

 private:
  struct Replacer;
  std::vector<NormStep> steps_;
  std::vector<std::unique_ptr<Replacer>> replacers_;  // one per step; null except for Replace
};

}  // namespace tzero
