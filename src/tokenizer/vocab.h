// A tokenizer vocabulary read from GGUF metadata (tokenizer.ggml.*), and the entry points to
// tokenize and detokenize with it. The algorithm is chosen by tokenizer.ggml.model:
// "llama" = SentencePiece-style BPE over scores with byte fallback (tokenizer/spm.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/gguf.h"

namespace tz {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

class Vocab {
 public:
  enum class Kind { Spm };

  // Throws tz::Error naming the file when the metadata holds no usable tokenizer.
  static Vocab from_gguf(const GgufFile& f);

  Kind kind() const { return kind_; }
  int n_tokens() const { return int(texts_.size()); }
  std::string_view text(int id) const { return texts_[size_t(id)]; }
  float score(int id) const { return scores_[size_t(id)]; }
  TokenType type(int id) const { return types_[size_t(id)]; }
  int find(std::string_view text) const;  // -1 when absent
  int byte_token(uint8_t byte) const { return byte_tokens_[byte]; }  // -1 when absent

  int bos() const { return bos_; }
  int eos() const { return eos_; }
  int unk() const { return unk_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

  // Text to ids. add_special: BOS/EOS as the vocabulary asks (add_bos/add_eos).
  // parse_special: control and user-defined token texts in the input become those tokens;
  // otherwise they are tokenized as plain text.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for: "▁" becomes a space, <0xXX> byte tokens their byte,
  // control tokens nothing (their text when `special` is true).
  std::string token_to_piece(int id, bool special = false) const;

 private:
  void tokenize_spm(std::string_view text, std::vector<int32_t>& out) const;

  Kind kind_ = Kind::Spm;
  std::vector<std::string_view> texts_;  // views into the GGUF mapping
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string_view, int> index_;
  std::vector<int> specials_;  // control and user-defined ids, longest text first
  int byte_tokens_[256];
  int bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = true, add_eos_ = false, add_space_prefix_ = true;
};

}  // namespace tz
