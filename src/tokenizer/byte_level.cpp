#include "tokenizer/byte_level.h"

#include <array>

namespace tzero::byte_level {

namespace {

struct Tables {
  std::array<uint32_t, 256> cp{};       // byte -> code point
  std::array<int16_t, 324> byte{};      // code point (< 256 + 68) -> byte, -1 if none
  std::array<std::string, 256> utf8{};  // byte -> UTF-8 of its code point
};

bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    r.byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) r.cp[size_t(b)] = stands_for_itself(b) ? uint32_t(b) : next++;
    for (int b = 0; b < 256; ++b) {
      const uint32_t c = r.cp[size_t(b)];
      r.byte[c] = int16_t(b);
      if (c < 0x80) {
        r.utf8[size_t(b)] = std::string(1, char(c));
      } else {  // all code points are below U+0800: two bytes
        r.utf8[size_t(b)] = {char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
      }
    }
    return r;
  }();
  return t;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t byte) {
  return tables().cp[byte];
}

int codepoint_to_byte(uint32_t cp) {
  return cp < 324 ? tables().byte[cp] : -1;
}

void encode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (unsigned char c : bytes) out += t.utf8[c];
}

std::string decode(std::string_view s) {
  const Tables& t = tables();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      const int b = t.byte[c];
      out += b >= 0 ? char(b) : char(c);
      ++i;
      continue;
    }
    // The alphabet lies below U+0800: only two-byte sequences can be mapped characters.
    if ((c >> 5) == 0x6 && i + 1 < s.size() &&
        (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
      const uint32_t cp = (uint32_t(c & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
      const int b = cp < 324 ? t.byte[cp] : -1;
      if (b >= 0) {
        out += char(b);
      } else {
        out.append(s.substr(i, 2));
      }
      i += 2;
      continue;
    }
    out += char(c);  // any other byte passes through
    ++i;
  }
  return out;
}

}  // namespace tzero::byte_level
