#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <new>

#include "base/error.h"
#include "base/excerpt.h"
#include "tokenizer/pre_tokenizer.h"

namespace tzero {

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// One match data block per thread, grown as needed (the expressions have few groups).
pcre2_match_data* thread_match_data() {
  struct Holder {
    pcre2_match_data* md = pcre2_match_data_create(16, nullptr);
    ~Holder() { pcre2_match_data_free(md); }
  };
  thread_local Holder h;
  if (!h.md) throw std::bad_alloc();
  return h.md;
}

}  // namespace

Regex::Regex(std::string_view pattern, bool subject_is_valid)
    : original_(pattern), subject_is_valid_(subject_is_valid) {
  const std::string widened = widen_whitespace_escapes(pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  const uint32_t opts = PCRE2_UTF | PCRE2_UCP | (subject_is_valid ? 0 : PCRE2_MATCH_INVALID_UTF);
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(widened.data()), widened.size(), opts, &err,
                        &off, nullptr);
  if (!code_)
    throw Error("regular expression /" + excerpt(original_) + "/: cannot compile at offset " +
                std::to_string(off) + ": " + pcre2_message(err));
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // optional: the interpreter serves without it
}

Regex::~Regex() {
  pcre2_code_free(code_);
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t len = text.size();
  const uint32_t match_opts = subject_is_valid_ ? PCRE2_NO_UTF_CHECK : 0;
  size_t search = 0;
  while (search < len) {
    int rc = pcre2_match(code_, subject, len, search, match_opts, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long pieces: the interpreter uses the heap
      rc = pcre2_match(code_, subject, len, search, match_opts | PCRE2_NO_JIT, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error("regular expression /" + excerpt(original_) +
                  "/: matching failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t ms = ov[0], me = ov[1];
    if (me == ms) {  // an empty match cuts nothing; go on after the next character
      search = ms + 1;
      while (search < len && (static_cast<unsigned char>(text[search]) & 0xC0) == 0x80) ++search;
      continue;
    }
    out.emplace_back(ms, me);
    search = me;
  }
}

}  // namespace tzero
