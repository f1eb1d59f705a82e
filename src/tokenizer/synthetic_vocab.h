// A synthetic SentencePiece-style vocabulary of any size, for generated models: <unk>, <s>,
// </s>, the 256 byte tokens, printable ASCII characters, "▁"-prefixed letters, common English
// words, then unique filler pieces. Valid for tzero and for llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tz {

struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // tokenizer.ggml.token_type values
};

SyntheticVocab make_synthetic_spm_vocab(int n_vocab);  // n_vocab >= 300

}  // namespace tz
