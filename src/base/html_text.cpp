// base/html_text.h
#include "base/html_text.h"

#include <algorithm>
#include <cstdio>

#include "base/html.h"

namespace tzero {

namespace {

bool continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The length of the valid UTF-8 sequence at s[i], or 0 when the byte there does not start one.
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if (!continuation(s[i + k])) return 0;
  if (n == 2 && c < 0xC2) return 0;  // overlong
  if (n == 3 && ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) >= 0xA0))) return 0;
  if (n == 4 && ((c == 0xF0 && b(i + 1) < 0x90) || c > 0xF4 || (c == 0xF4 && b(i + 1) >= 0x90)))
    return 0;
  return n;
}

}  // namespace

std::string html_visible(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 0 || (n == 1 && c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      char b[48];
      std::snprintf(b, sizeof b, "<span class='byte'>\\x%02X</span>", c);
      o += b;
      ++i;
      continue;
    }
    o += html_escape(s.substr(i, n));
    i += n;
  }
  return o;
}

TextStretch text_stretch(const std::string& a, const std::string& b) {
  TextStretch s;
  const size_t n = std::min(a.size(), b.size());
  while (s.prefix < n && a[s.prefix] == b[s.prefix]) ++s.prefix;
  while (s.prefix > 0 && s.prefix < n && (continuation(a[s.prefix]) || continuation(b[s.prefix])))
    --s.prefix;
  while (s.suffix < n - s.prefix && a[a.size() - 1 - s.suffix] == b[b.size() - 1 - s.suffix])
    ++s.suffix;
  while (s.suffix > 0 &&
         (continuation(a[a.size() - s.suffix]) || continuation(b[b.size() - s.suffix])))
    --s.suffix;
  return s;
}

std::string html_marked(const std::string& t, size_t from, size_t to) {
  std::string o = "<code class='text'>" + html_visible(t.substr(0, from));
  if (to > from)
    o += "<mark>" + html_visible(t.substr(from, to - from)) + "</mark>";
  else
    o += "<mark class='gap' title='the other text has more here'>&#9001;&#9002;</mark>";
  return o + html_visible(t.substr(to)) + "</code>";
}

const char* const kReportCss =
    "code.text{white-space:pre-wrap;word-break:break-word}mark{background:#ffd54f}"
    "mark.gap{background:#ef9a9a}.byte{color:#6a1b9a;background:#f3e5f5}"
    ".verdict{padding:14px 18px;border-radius:6px;margin:0 0 1.2em;font-size:18px}"
    ".verdict b{font-size:22px;margin-right:.6em}.verdict div{font-size:14px;margin-top:4px}"
    ".verdict.pass{background:#e6f4ea;border:2px solid #1a7f37;color:#0f5223}"
    ".verdict.fail{background:#fdecea;border:2px solid #c62828;color:#8e1c1c}"
    ".expected{color:#455a64;background:#eceff1;padding:1px 4px;border-radius:3px}";

std::string verdict_banner(bool pass, const std::string& headline, const std::string& detail) {
  return std::string("<div id='verdict' class='verdict ") + (pass ? "pass" : "fail") +
         "' role='status'><b>" + (pass ? "PASS" : "FAIL") + "</b>" + headline +
         (detail.empty() ? "" : "<div>" + detail + "</div>") + "</div>";
}

}  // namespace tzero
