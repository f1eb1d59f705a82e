// A synthetic SentencePiece-style vocabulary of any size, for generated models: <unk>, <s>,
// </s>, the 256 byte tokens, printable ASCII characters, "▁"-prefixed letters, common English
// words, then unique filler pieces. Valid for tzero and for llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf_writer.h"

namespace tzero {

// The contents of a SentencePiece-style vocabulary as GGUF stores them.
struct SpmVocabData {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // tokenizer.ggml.token_type values
};

SpmVocabData make_synthetic_spm_vocab(int n_vocab);  // n_vocab >= 300

// Writes the tokenizer metadata of an SPM vocabulary whose ids 0, 1, 2 are <unk>, <s>, </s>
// (as llama2.c's and gen-model's are): tokenizer.ggml.model "llama", tokens, scores, token types
// and the unknown, BOS and EOS ids.
void write_spm_vocab(GgufWriter& w, const SpmVocabData& v);

}  // namespace tzero
