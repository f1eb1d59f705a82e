#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>

#include "base/error.h"

namespace tzero::unicode {

size_t valid_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if ((b(i) & 0xC0) != 0x80) return 0;
  return n;
}

bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_sequence_length(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

// NFC of a well-formed run.
void nfc_run(std::string_view run, std::string& out) {
  bool simple = true;  // U+0300 is 0xCC 0x80: any lead byte below 0xCC is a code point < U+0300
  for (unsigned char c : run)
    if (c >= 0xCC) {
      simple = false;
      break;
    }
  if (simple) {
    out.append(run);
    return;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                          utf8proc_ssize_t(run.size()), &dst,
                                          utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {  // cannot happen for well-formed input, except out of memory
    std::free(dst);
    throw Error(std::string("NFC normalization failed: ") + utf8proc_errmsg(n));
  }
  out.append(reinterpret_cast<const char*>(dst), size_t(n));
  std::free(dst);
}

}  // namespace

void append_nfc(std::string_view s, std::string& out) {
  size_t run_start = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_sequence_length(s.substr(i));
    if (n > 0) {
      i += n;
      continue;
    }
    nfc_run(s.substr(run_start, i - run_start), out);
    out += s[i];  // the ill-formed byte, kept
    run_start = ++i;
  }
  nfc_run(s.substr(run_start), out);
}

}  // namespace tzero::unicode
