#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "base/excerpt.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/hf_pipeline.h"

namespace tzero {

namespace {

// Token types that tokenize() cuts out of the text before the algorithm runs.
bool is_special_type(TokenType t) {
  return t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
}

}  // namespace

void Vocab::warn(const GgufFile& f, const std::string& what) {
  warnings_.push_back(f.path() + ": " + what);
  std::fprintf(stderr, "warning: %s\n", warnings_.back().c_str());
}

Vocab Vocab::from_gguf(const GgufFile& f) {
  Vocab v;
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model.empty()) f.fail("no tokenizer in this file (missing 'tokenizer.ggml.model')");
  if (model == "llama")
    v.kind_ = Kind::Spm;
  else if (model == "gpt2")
    v.kind_ = Kind::Bpe;
  else
    f.fail("tokenizer '" + excerpt(model) + "' is not supported yet (supported: llama, gpt2)");
  v.texts_ = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.texts_.size();
  if (n == 0) f.fail("tokenizer has no tokens ('tokenizer.ggml.tokens')");
  if (n > size_t(INT32_MAX)) f.fail("tokenizer has too many tokens");
  v.scores_ = f.get_f32_array("tokenizer.ggml.scores");
  if (v.scores_.empty()) v.scores_.assign(n, 0.0f);
  if (v.scores_.size() != n) f.fail("tokenizer.ggml.scores has a different length than tokens");
  std::vector<int64_t> types = f.get_int_array("tokenizer.ggml.token_type");
  if (types.empty()) types.assign(n, int64_t(TokenType::Normal));
  if (types.size() != n) f.fail("tokenizer.ggml.token_type has a different length than tokens");
  v.types_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (types[i] < 0 || types[i] > 6) f.fail("tokenizer.ggml.token_type has an unknown value");
    v.types_[i] = TokenType(types[i]);
  }
  v.index_.build(v.texts_);
  // Special ids: -1 and 0xFFFFFFFF mean "none" (converters write both); any other id outside
  // the vocabulary is ignored with a warning, as llama.cpp does.
  auto id_key = [&](const char* key, int fallback) {
    const int64_t id = f.get_int(key, fallback);
    if (id == -1 || id == int64_t(UINT32_MAX)) return -1;
    if (id < 0 || id >= int64_t(n)) {
      v.warn(f, std::string("metadata '") + key + "' = " + std::to_string(id) +
                    " is not a token id; ignored");
      return -1;
    }
    return int(id);
  };
  v.bos_ = id_key("tokenizer.ggml.bos_token_id", -1);
  v.eos_ = id_key("tokenizer.ggml.eos_token_id", -1);
  v.eot_ = id_key("tokenizer.ggml.eot_token_id", -1);
  {
    const int ret = v.find("<|return|>"), call = v.find("<|call|>"), end = v.find("<|end|>");
    const bool harmony = ret >= 0 && call >= 0 && end >= 0;
    if (v.eot_ >= 0 && !(harmony && v.eot_ == end)) v.turn_ends_.push_back(v.eot_);
    if (harmony)
      for (const int id : {ret, call})
        if (id != v.eos_ && id != v.eot_) v.turn_ends_.push_back(id);
  }
  v.pad_ = id_key("tokenizer.ggml.padding_token_id", -1);
  v.unk_ = id_key("tokenizer.ggml.unknown_token_id", v.kind_ == Kind::Spm ? v.find("<unk>") : -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.byte_tokens_[b] = v.find(name);
  }

  bool add_bos_default = true;
  if (v.kind_ == Kind::Bpe) {
    const std::string pre = f.get_string("tokenizer.ggml.pre");
    PreTokenizerSpec pipeline;  // from tokenizer.tzero.pipeline, which wins over the name
    const PreTokenizerSpec* spec = nullptr;
    if (f.has(kPipelineKey)) {
      pipeline = parse_pipeline_metadata(f.get_string(kPipelineKey),
                                         f.path() + ": metadata '" + kPipelineKey + "'");
      spec = &pipeline;
    } else {
      spec = find_pre_tokenizer(pre);
    }
    if (!spec) {
      spec = find_pre_tokenizer("gpt-2");
      v.warn(f,
             (pre.empty() ? std::string("no pre-tokenizer given (tokenizer.ggml.pre)")
                          : "unknown pre-tokenizer '" + excerpt(pre) + "' (tokenizer.ggml.pre)") +
                 "; using the default (GPT-2's expression): token ids may differ from the "
                 "original tokenizer's. Known: " +
                 known_pre_tokenizer_names(true));
    }
    v.pre_ = spec->name;
    const auto& merges = f.get_string_array("tokenizer.ggml.merges");
    if (merges.empty()) f.fail("byte-level BPE tokenizer has no merges ('tokenizer.ggml.merges')");
    auto bpe = std::make_shared<BpeModel>(v, merges, *spec);
    if (bpe->n_skipped() > 0)
      v.warn(f, std::to_string(bpe->n_skipped()) + " of " + std::to_string(merges.size()) +
                    " merges name a token that is not in the vocabulary; they are ignored");
    v.bpe_ = std::move(bpe);
    add_bos_default = spec->add_bos;  // llama.cpp: only Llama 3 asks for BOS by default
    v.add_space_prefix_ = false;      // SentencePiece only
  } else {
    v.add_space_prefix_ = f.get_bool("tokenizer.ggml.add_space_prefix", true);
    v.spm_segmentable_ = spm_segmentable(v.texts_);
  }
  v.add_bos_ = f.get_bool("tokenizer.ggml.add_bos_token", add_bos_default) && v.bos_ >= 0;
  v.add_eos_ = f.get_bool("tokenizer.ggml.add_eos_token", false) && v.eos_ >= 0;

  for (size_t i = 0; i < n; ++i)
    if (is_special_type(v.types_[i]) && !v.texts_[i].empty())
      v.specials_by_byte_[static_cast<unsigned char>(v.texts_[i][0])].push_back(int(i));
  for (auto& bucket : v.specials_by_byte_)
    std::stable_sort(bucket.begin(), bucket.end(), [&](int a, int b) {
      return v.texts_[size_t(a)].size() > v.texts_[size_t(b)].size();
    });
  return v;
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_) out.push_back(bos_);
  bool prev_special = true;  // SentencePiece: the first fragment gets the prefix space
  auto emit_text = [&](std::string_view frag) {
    if (frag.empty()) return;
    if (kind_ == Kind::Bpe) {
      bpe_->encode(*this, frag, out);
    } else {
      std::string s;
      if (add_space_prefix_ && prev_special) s = " ";
      s.append(frag);
      tokenize_spm(s, out);
    }
    prev_special = false;
  };
  // Cut out special tokens: at each position the longest one that starts there.
  size_t start = 0;
  for (size_t pos = 0; pos < text.size();) {
    int match = -1;
    for (int id : specials_by_byte_[static_cast<unsigned char>(text[pos])]) {
      if (!parse_special && types_[size_t(id)] != TokenType::UserDefined) continue;
      const std::string_view t = texts_[size_t(id)];
      if (text.compare(pos, t.size(), t) == 0) {
        match = id;
        break;
      }
    }
    if (match < 0) {
      ++pos;
      continue;
    }
    emit_text(text.substr(start, pos - start));
    out.push_back(match);
    prev_special = true;
    pos += texts_[size_t(match)].size();
    start = pos;
  }
  emit_text(text.substr(start));
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

std::string Vocab::token_to_piece(int id, bool special) const {
  if (id < 0 || id >= n_tokens()) return "";
  const std::string_view t = texts_[size_t(id)];
  switch (types_[size_t(id)]) {
    case TokenType::Byte: {
      unsigned b = 0;
      if (t.size() == 6 && std::sscanf(std::string(t).c_str(), "<0x%02X>", &b) == 1)
        return std::string(1, char(b));
      return std::string(t);
    }
    case TokenType::Control:
      return special ? std::string(t) : "";
    case TokenType::UserDefined:
      return std::string(t);
    case TokenType::Unknown:
      if (kind_ == Kind::Bpe) return special ? std::string(t) : "";
      return " \xE2\x81\x87 ";  // " ⁇ ", as SentencePiece renders <unk>
    case TokenType::Unused:
    case TokenType::Undefined:
      return "";
    case TokenType::Normal:
      break;
  }
  if (kind_ == Kind::Bpe) return byte_level::decode(t);
  std::string s;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "\xE2\x96\x81") == 0) {  // U+2581 "▁"
      s += ' ';
      i += 2;
    } else {
      s += t[i];
    }
  }
  return s;
}

std::string Vocab::detokenize(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool strip = add_space_prefix_;  // the next text piece begins with tokenize()'s prefix space
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    const TokenType t = id >= 0 && id < n_tokens() ? types_[size_t(id)] : TokenType::Undefined;
    if (t == TokenType::Control || t == TokenType::UserDefined) {
      strip = add_space_prefix_;
    } else {
      if (strip && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace tzero
