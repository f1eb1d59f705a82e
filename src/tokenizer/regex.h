// A compiled PCRE2 expression for the tokenizers (UTF + UCP, JIT when the library has it), and
// the search loop the normalizers and pre-tokenizers share. `\s` and `\S` are widened to
// Unicode White_Space before compiling (widen_whitespace_escapes in pre_tokenizer.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;

namespace tzero {

class Regex {
 public:
  // `subject_is_valid`: every subject will be well-formed UTF-8 (byte-level text), so the UTF
  // check is skipped; otherwise ill-formed bytes are allowed and never match. Throws
  // tzero::Error naming the expression when PCRE2 rejects it.
  Regex(std::string_view pattern, bool subject_is_valid);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return original_; }

  // The non-empty matches in `subject`, leftmost first, as [start, end) offsets (an empty match
  // cuts nothing: the search goes on after the next character). Safe to call from several
  // threads at once.
  void find_all(std::string_view subject, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  pcre2_real_code_8* code_ = nullptr;
  std::string original_;
  bool subject_is_valid_;
};

}  // namespace tzero
