// Small helpers for the self-contained HTML reports (audit, probe).
#pragma once

#include <cstdio>
#include <string>

namespace tzero {

// Escapes text for HTML element content and quoted attribute values.
inline std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// v with `prec` digits after the point ("%.*f").
inline std::string fixed(double v, int prec = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

}  // namespace tzero
