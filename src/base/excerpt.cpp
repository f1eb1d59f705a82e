#include "base/excerpt.h"

#include <cstdio>

namespace tzero {

namespace {

// The length of the valid UTF-8 sequence starting at s[i], or 0.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  if (b < 0x80)
    return 1;
  else if (b >= 0xC2 && b <= 0xDF)
    n = 2;
  else if (b >= 0xE0 && b <= 0xEF)
    n = 3;
  else if (b >= 0xF0 && b <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string excerpt(std::string_view text, size_t max_chars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = utf8_length(text, i);
    const auto b = static_cast<unsigned char>(text[i]);
    const bool escaped = n == 0 || b < 0x20 || b == 0x7f;
    // The bound is on what the message gets: an escaped byte counts as its 4 bytes, so that
    // binary text is cut as short as words are.
    if (out.size() + (escaped ? 4 : n) > max_chars) break;
    if (escaped) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      out += buf;
      i += 1;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace tzero
