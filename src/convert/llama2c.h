// Import of Karpathy's llama2.c checkpoints (run.c's format) into GGUF.
//
// Checkpoint: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; a negative vocab_size means a separate classifier), then float32
// tensors: token_embedding[vocab][dim], rms_att[L][dim], wq[L][dim][dim], wk[L][kv][dim],
// wv[L][kv][dim], wo[L][dim][dim], rms_ffn[L][dim], w1[L][hidden][dim], w2[L][dim][hidden],
// w3[L][hidden][dim], rms_final[dim], two legacy rope tables of seq_len*head_size/2 floats,
// then wcls[vocab][dim] when not shared.
// Tokenizer: int32 max_token_length, then per token float32 score, int32 length, bytes.
// The result is architecture "llama" with llama.cpp's tensor names; run.c rotates
// interleaved pairs, which is the llama layout, so no weight permutation is needed.
#pragma once

#include <string>

namespace tzero {

struct Llama2cImportStats {
  int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
  bool shared_classifier;
};

// Throws tzero::Error naming the file and the problem.
Llama2cImportStats convert_llama2c(const std::string& model_path, const std::string& tokenizer_path,
                                   const std::string& out_path);

}  // namespace tzero
