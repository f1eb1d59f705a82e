// Import of a Hugging Face byte-level BPE tokenizer (vocab.json + merges.txt, and tokenizer.json
// / tokenizer_config.json when present) into a vocab-only GGUF with tokenizer.ggml.* metadata,
// so a vocabulary published only in Hugging Face form can be used and tested.
#pragma once

#include <string>

namespace tzero {

struct HfImportOptions {
  std::string pre;  // tokenizer.ggml.pre to write; "" = recognize it from tokenizer.json
};

struct HfImportSummary {
  std::string pre;         // the pre-tokenizer written
  std::string pre_source;  // how it was chosen: "--pre" or "tokenizer.json"
  int n_tokens = 0;        // including added tokens and "[PAD<id>]" fillers of unused ids
  int n_merges = 0;
  int n_added = 0;  // added tokens (special ones become control tokens)
};

// Reads the tokenizer files of `dir` and writes `out_path`. The vocabulary comes from vocab.json
// and merges.txt, or else from tokenizer.json's "model"; added tokens from tokenizer.json's
// "added_tokens" and tokenizer_config.json's "added_tokens_decoder"; BOS/EOS/PAD/UNK and
// add_bos/add_eos from tokenizer_config.json. The pre-tokenizer is options.pre when given,
// otherwise the one whose steps, normalizer and ignore_merges equal tokenizer.json's. Throws
// tzero::Error naming the file and the problem (not byte-level BPE, pre-tokenizer not
// recognized and no --pre, malformed JSON, ...).
HfImportSummary import_hf_tokenizer(const std::string& dir, const std::string& out_path,
                                    const HfImportOptions& options);

}  // namespace tzero
