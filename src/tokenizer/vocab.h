// A tokenizer vocabulary read from GGUF metadata (tokenizer.ggml.*), and the entry points to
// tokenize and detokenize with it. The algorithm is chosen by tokenizer.ggml.model:
//   "llama" = SentencePiece-style BPE over scores with byte fallback (tokenizer/spm.cpp);
//   "gpt2"  = byte-level BPE over ranked merges, with the pipeline (normalizer and
//             pre-tokenizer) of tokenizer.tzero.pipeline when present (tokenizer/hf_pipeline.h),
//             else the one named by tokenizer.ggml.pre (tokenizer/bpe.h, pre_tokenizer.h).
// docs/TOKENIZERS.md says what is supported and how it follows the original tokenizers.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/token_index.h"

namespace tzero {

class BpeModel;

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
  enum class Kind { Spm, Bpe };

  // Throws tzero::Error naming the file when the metadata holds no usable tokenizer. Problems that
  // still leave a usable tokenizer (an unknown tokenizer.ggml.pre, merges that cannot apply)
  // are printed to stderr as "warning: ..." lines and kept in warnings().
  static Vocab from_gguf(const GgufFile& f);

  Kind kind() const { return kind_; }
  int n_tokens() const { return int(texts_.size()); }
  std::string_view text(int id) const { return texts_[size_t(id)]; }
  float score(int id) const { return scores_[size_t(id)]; }
  TokenType type(int id) const { return types_[size_t(id)]; }
  int find(std::string_view text) const { return index_.find(text, texts_); }  // -1: absent
  int byte_token(uint8_t byte) const { return byte_tokens_[byte]; }            // -1 when absent

  // Special ids from metadata, -1 when absent.
  int bos() const { return bos_; }
  int eos() const { return eos_; }
  int eot() const { return eot_; }  // end of turn (tokenizer.ggml.eot_token_id)
  // The ids besides eos that end a turn: eot, and in a harmony vocabulary (gpt-oss: the tokens
  // <|return|>, <|call|> and <|end|>) <|return|> and <|call|> but not <|end|>, which separates
  // the reasoning channel from the answer (llama.cpp's harmony rule); -1 never appears.
  const std::vector<int>& turn_ends() const { return turn_ends_; }
  bool ends_turn(int id) const {
    for (const int e : turn_ends_)
      if (e == id) return true;
    return false;
  }
  int pad() const { return pad_; }
  int unk() const { return unk_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  // Byte-level BPE: the pre-tokenizer in effect (its canonical name, "tzero-pipeline" for one
  // read from tokenizer.tzero.pipeline); "" for SentencePiece.
  const std::string& pre() const { return pre_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Text to ids. add_special: BOS/EOS as the vocabulary asks (add_bos/add_eos).
  // Tokens of type user-defined (added tokens) are always cut out of the text first, whole;
  // control (and unknown-type) token texts are cut out only with parse_special, otherwise they
  // are tokenized as plain text. Where two could start at one place, the longest wins; the
  // leftmost start comes first (Hugging Face's added-token matching).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes a token stands for: SentencePiece "▁" becomes a space, byte-level BPE text its
  // bytes, <0xXX> byte tokens their byte, user-defined tokens their text; control tokens give
  // nothing (their text when `special` is true).
  std::string token_to_piece(int id, bool special = false) const;

  // The text of a sequence of ids: the pieces back to back, less the SentencePiece prefix space
  // that tokenize() adds at the start and after each control or user-defined token. So
  // detokenize(tokenize(t, any, false)) == t for any text t (for NFC-normalizing vocabularies,
  // any NFC text t), and the same with parse_special and special both true.
  std::string detokenize(const std::vector<int32_t>& ids, bool special = false) const;

 private:
  void tokenize_spm(std::string_view text, std::vector<int32_t>& out) const;
  void merge_spm(std::string_view escaped, std::vector<int32_t>& out) const;
  // Whether no token has a "▁" right after another character (see spm.cpp).
  static bool spm_segmentable(const std::vector<std::string_view>& texts);
  void warn(const GgufFile& f, const std::string& what);

  Kind kind_ = Kind::Spm;
  std::vector<std::string_view> texts_;  // views into the GGUF mapping
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  TokenIndex index_;
  // Control, user-defined and unknown-type ids with text, by first byte, longest text first.
  std::array<std::vector<int>, 256> specials_by_byte_;
  int byte_tokens_[256];
  int bos_ = -1, eos_ = -1, eot_ = -1, pad_ = -1, unk_ = -1;
  std::vector<int> turn_ends_;
  bool add_bos_ = true, add_eos_ = false, add_space_prefix_ = true;
  bool spm_segmentable_ = false;
  std::string pre_;
  std::shared_ptr<const BpeModel> bpe_;
  std::vector<std::string> warnings_;
};

}  // namespace tzero
