#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"

namespace tz {

Vocab Vocab::from_gguf(const GgufFile& f) {
  Vocab v;
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model.empty()) f.fail("no tokenizer in this file (missing 'tokenizer.ggml.model')");
  if (model != "llama")
    f.fail("tokenizer '" + model + "' is not supported yet (supported: llama)");
  v.kind_ = Kind::Spm;
  v.texts_ = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.texts_.size();
  if (n == 0) f.fail("tokenizer has no tokens ('tokenizer.ggml.tokens')");
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
  for (size_t i = 0; i < n; ++i) v.index_[v.texts_[i]] = int(i);  // last one wins, as llama.cpp
  auto id_key = [&](const char* key, int fallback) {
    int64_t id = f.get_int(key, fallback);
    if (id < -1 || id >= int64_t(n)) f.fail(std::string("metadata '") + key + "' is out of range");
    return int(id);
  };
  v.bos_ = id_key("tokenizer.ggml.bos_token_id", -1);
  v.eos_ = id_key("tokenizer.ggml.eos_token_id", -1);
  v.unk_ = id_key("tokenizer.ggml.unknown_token_id", v.find("<unk>"));
  v.add_bos_ = f.get_bool("tokenizer.ggml.add_bos_token", true) && v.bos_ >= 0;
  v.add_eos_ = f.get_bool("tokenizer.ggml.add_eos_token", false) && v.eos_ >= 0;
  v.add_space_prefix_ = f.get_bool("tokenizer.ggml.add_space_prefix", true);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.byte_tokens_[b] = v.find(name);
  }
  for (size_t i = 0; i < n; ++i)
    if ((v.types_[i] == TokenType::Control || v.types_[i] == TokenType::UserDefined) &&
        !v.texts_[i].empty())
      v.specials_.push_back(int(i));
  std::stable_sort(v.specials_.begin(), v.specials_.end(), [&](int a, int b) {
    return v.texts_[size_t(a)].size() > v.texts_[size_t(b)].size();
  });
  return v;
}

int Vocab::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && add_bos_) out.push_back(bos_);
  // Split the text into raw fragments and special tokens (only when asked to parse them).
  bool prev_special = true;  // the first fragment gets the SentencePiece space prefix
  size_t start = 0;
  auto emit_text = [&](std::string_view frag) {
    if (frag.empty()) return;
    std::string s;
    if (add_space_prefix_ && prev_special) s = " ";
    s.append(frag);
    tokenize_spm(s, out);
    prev_special = false;
  };
  if (parse_special) {
    size_t pos = 0;
    while (pos < text.size()) {
      int match = -1;
      for (int id : specials_) {
        std::string_view t = texts_[size_t(id)];
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
    case TokenType::Unknown:
      return " \xE2\x81\x87 ";  // " ⁇ ", as SentencePiece renders <unk>
    default: {
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
  }
}

}  // namespace tz
