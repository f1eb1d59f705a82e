// Readable token pieces (tokenizer/piece_display.h).
#include "tokenizer/piece_display.h"

#include <cstdio>

#include "tokenizer/unicode.h"

namespace tzero {

std::string piece_bytes(const Vocab& vocab, int id) {
  if (id < 0 || id >= vocab.n_tokens()) return "";
  switch (vocab.type(id)) {
    case TokenType::Normal:
    case TokenType::Byte:
    case TokenType::UserDefined:
      return vocab.token_to_piece(id, true);
    default:
      return std::string(vocab.text(id));
  }
}

std::string display_piece(std::string_view bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const size_t n = unicode::valid_sequence_length(bytes.substr(i));
    if (n > 1) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (n == 1 && c >= 0x20 && c != 0x7F) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", c);
      out += hex;
    }
    ++i;
  }
  return out;
}

}  // namespace tzero
