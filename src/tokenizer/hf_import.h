// Import of a Hugging Face tokenizer (vocab.json + merges.txt, and tokenizer.json /
// tokenizer_config.json when present) into a vocab-only GGUF with tokenizer.ggml.* metadata,
// so a vocabulary published only in Hugging Face form can be used and tested.
//
// Two kinds of tokenizer.json are understood:
//   - byte-level BPE (a ByteLevel pre-tokenizer step): tokenizer.ggml.model "gpt2"; the
//     normalizer and pre-tokenizer steps are read (hf_pipeline.h). When they equal a named
//     pipeline, its name is written as tokenizer.ggml.pre; otherwise tokenizer.ggml.pre is
//     "tzero-pipeline" and the steps themselves go into tokenizer.tzero.pipeline.
//   - SentencePiece-style BPE over "▁" with byte fallback (hf_import_spm.h): tokenizer.ggml.model
//     "llama", with scores from the merge ranks and <0xNN> byte tokens.
#pragma once

#include <string>

namespace tzero {

struct HfImportOptions {
  std::string pre;  // tokenizer.ggml.pre to write; "" = read the pipeline from tokenizer.json
};

struct HfImportSummary {
  std::string model;       // tokenizer.ggml.model written: "gpt2" or "llama"
  std::string pre;         // the pre-tokenizer written ("tzero-pipeline": the steps themselves)
  std::string pre_source;  // how it was chosen: "--pre" or "tokenizer.json"
  bool add_space_prefix = false;  // "llama": the dummy prefix "▁"
  int n_tokens = 0;               // including added tokens and "[PAD<id>]" fillers of unused ids
  int n_merges = 0;
  int n_added = 0;  // added tokens (special ones become control tokens)
};

// Reads the tokenizer files of `dir` and writes `out_path`. The vocabulary comes from vocab.json
// and merges.txt, or else from tokenizer.json's "model"; added tokens from tokenizer.json's
// "added_tokens" and tokenizer_config.json's "added_tokens_decoder"; BOS/EOS/PAD/UNK and
// add_bos/add_eos from tokenizer_config.json. The pre-tokenizer is options.pre when given,
// otherwise the pipeline tokenizer.json spells out. Throws tzero::Error naming the file and the
// problem (a step or option that is not supported, no way to tell the pre-tokenizer, malformed
// or truncated JSON, ...).
HfImportSummary import_hf_tokenizer(const std::string& dir, const std::string& out_path,
                                    const HfImportOptions& options);

}  // namespace tzero
