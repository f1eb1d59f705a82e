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

// Decodes the well-formed sequence of length n at the start of s.
char32_t decode(std::string_view s, size_t n) {
  const auto b = [&](size_t i) { return char32_t(static_cast<unsigned char>(s[i])); };
  if (n == 1) return b(0);
  if (n == 2) return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
  if (n == 3) return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
}

void encode(char32_t cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_int32_t(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

// The normal form of a well-formed run.
void normalize_run(std::string_view run, NormalForm form, std::string& out) {
  // U+0300 is 0xCC 0x80: any lead byte below 0xCC is a code point < U+0300, which NFC leaves
  // alone. The other forms change some of those (NFD decomposes U+00E9, NFKC maps U+00A0, ...):
  // only ASCII is safe there.
  const unsigned char limit = form == NormalForm::NFC ? 0xCC : 0x80;
  bool simple = true;
  for (unsigned char c : run)
    if (c >= limit) {
      simple = false;
      break;
    }
  if (simple) {
    out.append(run);
    return;
  }
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::NFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::NFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::NFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                   utf8proc_ssize_t(run.size()), &dst, utf8proc_option_t(options));
  if (n < 0) {  // cannot happen for well-formed input, except out of memory
    std::free(dst);
    throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  }
  out.append(reinterpret_cast<const char*>(dst), size_t(n));
  std::free(dst);
}

}  // namespace

void append_normalized(std::string_view s, NormalForm form, std::string& out) {
  size_t run_start = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_sequence_length(s.substr(i));
    if (n > 0) {
      i += n;
      continue;
    }
    normalize_run(s.substr(run_start, i - run_start), form, out);
    out += s[i];  // the ill-formed byte, kept
    run_start = ++i;
  }
  normalize_run(s.substr(run_start), form, out);
}

void append_nfc(std::string_view s, std::string& out) {
  append_normalized(s, NormalForm::NFC, out);
}

void append_lowercase(std::string_view s, std::string& out) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = valid_sequence_length(s.substr(i));
    if (n == 0) {
      out += s[i++];
      continue;
    }
    const char32_t cp = decode(s.substr(i), n);
    if (cp < 0x80) {
      out += char(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    } else if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: "i" + COMBINING DOT
      out += "i\xCC\x87";
    } else {
      encode(char32_t(utf8proc_tolower(utf8proc_int32_t(cp))), out);
    }
    i += n;
  }
}

bool starts_with_white_space(std::string_view s, size_t& len) {
  len = valid_sequence_length(s);
  if (len == 0) return false;
  const char32_t c = decode(s, len);
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace tzero::unicode
