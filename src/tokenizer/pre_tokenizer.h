// Pre-tokenizers of byte-level BPE: how the (normalized) text is cut into words before merges
// are applied. A pipeline is written as the Hugging Face `tokenizers` pre-tokenizer steps of
// the original tokenizer.json, in order: Split (a regular expression or a literal string, with
// its behaviour and `invert`), Digits, Punctuation, Whitespace, WhitespaceSplit and exactly one
// ByteLevel. Named pipelines (tokenizer.ggml.pre values, pre_tokenizer_specs.cpp) carry the
// original expressions; any other one comes from tokenizer.json through the importer
// (hf_pipeline.h). docs/TOKENIZERS.md lists them and where they come from.
//
// Every step cuts each current piece on its own: the step's matches and the text between them
// are segments, and the behaviour says what becomes of them, as in Hugging Face
// (SplitDelimiterBehavior): Removed drops the matches, Isolated keeps each as a piece,
// MergedWithPrevious / MergedWithNext glue a match to the non-match segment before / after it,
// Contiguous makes a run of adjacent matches one piece. `invert` swaps the roles of matches and
// the text between them. A regular expression sees one piece at a time (a look-ahead never
// looks past the end of the piece); an empty match cuts nothing.
//
// ByteLevel (add_prefix_space: a space before each piece that has none; use_regex: then a cut
// with the GPT-2 expression) rewrites the pieces in the byte-level alphabet
// (tokenizer/byte_level.h); later steps see them in that form, as in the original. Regular
// expressions run on PCRE2 with UTF and UCP (JIT when the library has it); `\s` is widened to
// Unicode White_Space (PCRE2 leaves out U+0085).
//
// Ill-formed UTF-8 never matches a character class: each ill-formed byte ends up in a piece
// between matches, and so in a word of its own (through its byte-level character), which keeps
// encoding lossless.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/normalizer.h"

namespace tzero {

// Hugging Face's SplitDelimiterBehavior.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
// The tokenizer.json spelling ("Isolated", ...), and back (false for an unknown name).
const char* split_behavior_name(SplitBehavior b);
bool parse_split_behavior(std::string_view name, SplitBehavior& out);

struct PreStep {
  enum class Kind { Split, Digits, Punctuation, Whitespace, WhitespaceSplit, ByteLevel };
  Kind kind = Kind::Split;
  std::string regex;  // Split: a PCRE2 expression (a literal String pattern, escaped)
  SplitBehavior behavior = SplitBehavior::Isolated;  // Split, Punctuation
  bool invert = false;                               // Split
  bool flag = false;              // Digits: individual_digits; ByteLevel: use_regex
  bool add_prefix_space = false;  // ByteLevel
  bool operator==(const PreStep&) const = default;
};

struct PreTokenizerSpec {
  std::string name;                   // the canonical tokenizer.ggml.pre value
  std::vector<std::string> aliases;   // other tokenizer.ggml.pre values meaning the same
  std::vector<PreStep> steps;         // contains exactly one ByteLevel step
  std::vector<NormStep> normalizers;  // the original's normalizer steps, in order
  bool ignore_merges = false;         // a word that is a token is taken whole (Llama 3)
  bool add_bos = false;               // default of tokenizer.ggml.add_bos_token
};

// All known named pipelines, "gpt-2" first (pre_tokenizer_specs.cpp).
const std::vector<PreTokenizerSpec>& pre_tokenizer_specs();
// The spec whose name or alias is `name`, or nullptr.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// The names (and aliases) of the named pipelines, comma-separated, for messages.
std::string known_pre_tokenizer_names(bool with_aliases);
// The GPT-2 expression (what ByteLevel with use_regex cuts with).
extern const char* const kGpt2Regex;

class PreTokenizer {
 public:
  // Compiles the steps' expressions. Throws tzero::Error naming the expression when PCRE2
  // rejects one, or when the steps do not hold exactly one ByteLevel.
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
  std::unique_ptr<Stage> byte_level_regex_;          // ByteLevel's own cut (use_regex), or null
  bool add_prefix_space_ = false;                    // ByteLevel's add_prefix_space
  std::vector<std::unique_ptr<Stage>> byte_stages_;  // after it
};

// `pattern` with \s and \S replaced by classes of Unicode White_Space (what the original
// regex engines mean by \s). Throws tzero::Error for \S inside a character class.
std::string widen_whitespace_escapes(std::string_view pattern);

// A PCRE2 expression matching exactly the text `literal` (a tokenizer.json String pattern).
std::string escape_regex_literal(std::string_view literal);

}  // namespace tzero
