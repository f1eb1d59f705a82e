// Byte-level BPE (tokenizer.ggml.model = "gpt2"), as GPT-2, Llama 3, Qwen2 and DeepSeek use it
// and as Hugging Face `tokenizers` and llama.cpp implement it:
//   1. the pipeline's normalizer steps (normalizer.h: NFC for Qwen2, ...) run, then its
//      pre-tokenizer (pre_tokenizer.h) cuts the text into words in the byte-level alphabet;
//   2. each word starts as one symbol per byte (its byte-level character's token);
//   3. repeatedly, of all adjacent pairs listed in tokenizer.ggml.merges ("a b", one per line,
//      earlier = higher priority), the one of lowest rank is merged (ties: the leftmost);
//   4. each final symbol is its token. With ignore_merges (Llama 3), a word that is itself a
//      token is taken whole first.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace tzero {

class Vocab;

class BpeModel {
 public:
  // `merges` as stored in tokenizer.ggml.merges; `vocab` holds the tokens. Merges whose parts
  // or result are not tokens cannot apply and are skipped; their number is `n_skipped()`.
  BpeModel(const Vocab& vocab, const std::vector<std::string_view>& merges,
           const PreTokenizerSpec& pre);

  const PreTokenizerSpec& pre() const { return pre_.spec(); }
  size_t n_merges() const { return n_merges_; }
  size_t n_skipped() const { return n_skipped_; }

  // Tokenizes one fragment of plain text (no special tokens in it), appending ids to `out`.
  void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

 private:
  // The merge table: (left id, right id) -> (rank, result id), open addressing.
  struct Merge {
    uint64_t key;
    int32_t rank;  // -1: empty slot
    int32_t result;
  };
  static uint64_t key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  size_t slot_of(uint64_t k) const { return size_t((k * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }
  const Merge* find_merge(int32_t a, int32_t b) const;
  void encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out) const;

  Normalizer normalizer_;
  PreTokenizer pre_;
  std::vector<Merge> merges_;
  size_t mask_ = 0;
  size_t n_merges_ = 0;
  std::array<int32_t, 324> char_token_{};  // token of each byte-level character, -1 if none
  size_t n_skipped_ = 0;
};

}  // namespace tzero
