// Turns generated tokens into text for streaming: holds back incomplete UTF-8 sequences so no
// broken character is ever emitted, and drops the SentencePiece space after BOS.
#pragma once

#include <string>

#include "tokenizer/vocab.h"

namespace tzero {

class TextStream {
 public:
  explicit TextStream(const Vocab& vocab) : vocab_(vocab) {}
  // Returns the text that is complete after this token (possibly empty).
  std::string push(int32_t token, int32_t prev_token);
  // Whatever is still held back (an incomplete sequence at the end), flushed as is.
  std::string finish();

 private:
  const Vocab& vocab_;
  std::string pending_;
};

}  // namespace tzero
