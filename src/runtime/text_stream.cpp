#include "runtime/text_stream.h"

namespace tzero {

namespace {
// Length of the longest prefix of s made of complete UTF-8 sequences (invalid bytes count as
// complete single characters, so they are never held forever).
size_t complete_prefix(const std::string& s) {
  size_t i = s.size();
  // Look back at most 3 bytes for a lead byte whose sequence is incomplete.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (need > back) i = s.size() - back;
    break;
  }
  return i;
}
}  // namespace

std::string TextStream::push(int32_t token, int32_t prev_token) {
  std::string piece = vocab_.token_to_piece(token);
  if (prev_token == vocab_.bos() && vocab_.add_space_prefix() && !piece.empty() && piece[0] == ' ')
    piece.erase(0, 1);
  pending_ += piece;
  const size_t n = complete_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string TextStream::finish() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace tzero
