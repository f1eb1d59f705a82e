#include "tokenizer/hf_import.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "format/gguf_writer.h"
#include "tokenizer/hf_import_spm.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace tzero {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(p.string() + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json read_json(const fs::path& p) {
  try {
    return parse_json_bounded(read_all(p));
  } catch (const json::exception& e) {
    throw Error(p.string() + ": not valid JSON: " + excerpt(e.what()));
  }
}

// A merge line "a b": the separator is the first space after the first character (as
// llama.cpp reads them).
bool split_merge(std::string_view m, std::pair<std::string, std::string>& out) {
  const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
  if (sp == std::string_view::npos) return false;
  out = {std::string(m.substr(0, sp)), std::string(m.substr(sp + 1))};
  return true;
}

// Writes the byte-level BPE pipeline: --pre, else the named pipeline equal to tokenizer.json's,
// else tokenizer.json's steps themselves (tokenizer.tzero.pipeline).
void choose_pre(const json& tj, const std::string& tj_name, const std::string& dir_name,
                bool ignore_merges, const HfImportOptions& options, HfImportSummary& sum,
                GgufWriter& w) {
  const json normalizer = tj.is_object() ? tj.value("normalizer", json()) : json();
  const json pre = tj.is_object() ? tj.value("pre_tokenizer", json()) : json();
  sum.model = "gpt2";
  w.add_string("tokenizer.ggml.model", "gpt2");
  if (!options.pre.empty()) {
    const PreTokenizerSpec* named = find_pre_tokenizer(options.pre);
    if (!named)
      throw Error("--pre '" + options.pre + "' is not a known pre-tokenizer (known: " +
                  known_pre_tokenizer_names(false) + ")");
    sum.pre = named->name;
    sum.pre_source = "--pre";
    if (tj.is_object()) {
      const PreTokenizerSpec* recognized = nullptr;
      try {
        recognized =
            find_equal_named_spec(parse_hf_pipeline(normalizer, pre, ignore_merges, tj_name));
      } catch (const Error&) {  // --pre decides; tokenizer.json's steps need not be supported
      }
      if (recognized && recognized != named)
        std::fprintf(stderr, "warning: %s describes the pre-tokenizer '%s'; writing '%s' (--pre)\n",
                     tj_name.c_str(), recognized->name.c_str(), sum.pre.c_str());
    }
    w.add_string("tokenizer.ggml.pre", sum.pre);
    return;
  }
  if (!tj.is_object())
    throw Error(dir_name +
                ": no tokenizer.json to tell the pre-tokenizer from; give --pre NAME (known: " +
                known_pre_tokenizer_names(false) + ")");
  const PreTokenizerSpec spec = parse_hf_pipeline(normalizer, pre, ignore_merges, tj_name);
  {  // every expression compiles
    const Normalizer check_normalizer(spec.normalizers);
    const PreTokenizer check_pre(spec);
  }
  sum.pre_source = "tokenizer.json";
  if (const PreTokenizerSpec* named = find_equal_named_spec(spec)) {
    sum.pre = named->name;
  } else {
    sum.pre = kPipelinePreName;
    w.add_string(kPipelineKey, pipeline_metadata(normalizer, pre, ignore_merges));
  }
  w.add_string("tokenizer.ggml.pre", sum.pre);
}

// Writes a SentencePiece-style vocabulary: byte tokens typed, the unknown token, scores from the
// merge ranks, the dummy prefix.
void write_spm(const json& tj, const std::string& tj_name,
               const std::vector<std::pair<std::string, std::string>>& merges,
               const std::vector<std::string>& tokens, std::vector<int32_t>& types,
               HfImportSummary& sum, GgufWriter& w) {
  sum.model = "llama";
  sum.add_space_prefix = spm_add_space_prefix(tj, tj_name);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (types[i] == int32_t(TokenType::Normal) && t.size() == 6 && t.rfind("<0x", 0) == 0 &&
        t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
        std::isxdigit(static_cast<unsigned char>(t[4])) && !std::islower(t[3]) &&
        !std::islower(t[4]))
      types[i] = int32_t(TokenType::Byte);
  }
  const json model = tj.value("model", json::object());
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const std::string unk = model["unk_token"].get<std::string>();
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == unk && types[i] != int32_t(TokenType::Unused)) {
        types[i] = int32_t(TokenType::Unknown);
        break;
      }
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", spm_scores_from_merges(tokens, merges));
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_bool("tokenizer.ggml.add_space_prefix", sum.add_space_prefix);
}

// A token named in tokenizer_config.json: a string, {"content": ...}, or null.
std::string config_token(const json& cfg, const char* key) {
  if (!cfg.contains(key)) return "";
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return "";
}

HfImportSummary import_impl(const std::string& dir_name, const std::string& out_path,
                            const HfImportOptions& options) {
  const fs::path dir(dir_name);
  if (!fs::is_directory(dir)) throw Error(dir_name + ": not a directory");
  const fs::path vocab_path = dir / "vocab.json", merges_path = dir / "merges.txt";
  const fs::path tj_path = dir / "tokenizer.json", cfg_path = dir / "tokenizer_config.json";
  const json tj = fs::exists(tj_path) ? read_json(tj_path) : json();
  const json cfg = fs::exists(cfg_path) ? read_json(cfg_path) : json::object();
  const json model = tj.is_object() ? tj.value("model", json::object()) : json::object();
  if (tj.is_object() && model.value("type", "BPE") != "BPE")
    throw Error(tj_path.string() + ": model type '" + excerpt(model.value("type", "")) +
                "' is not BPE; only byte-level and SentencePiece-style BPE tokenizers can be "
                "imported");
  const bool spm = tj.is_object() && is_spm_style(tj);
  if (spm && !options.pre.empty())
    throw Error("--pre applies to byte-level BPE; " + tj_path.string() +
                " is a SentencePiece-style tokenizer (no ByteLevel step)");

  // The base vocabulary: id -> text.
  std::map<int64_t, std::string> by_id;
  auto add_vocab = [&](const json& v, const std::string& where) {
    if (!v.is_object()) throw Error(where + ": the vocabulary is not a JSON object");
    for (const auto& [text, id] : v.items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        throw Error(where + ": token '" + excerpt(text) + "' has no valid id");
      if (!by_id.emplace(id.get<int64_t>(), text).second)
        throw Error(where + ": id " + std::to_string(id.get<int64_t>()) + " is used twice");
    }
  };
  std::vector<std::string> merges;  // "a b", as tokenizer.ggml.merges holds them
  std::vector<std::pair<std::string, std::string>> merge_pairs;
  if (fs::exists(vocab_path)) {
    add_vocab(read_json(vocab_path), vocab_path.string());
    if (!fs::exists(merges_path)) throw Error(merges_path.string() + ": missing");
    std::istringstream in(read_all(merges_path));
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (first && line.rfind("#version", 0) == 0) {
        first = false;
        continue;
      }
      first = false;
      if (line.empty()) continue;
      std::pair<std::string, std::string> pair;
      if (!split_merge(line, pair))
        throw Error(merges_path.string() + ": a merge is not \"a b\": '" + excerpt(line) + "'");
      merges.push_back(line);
      merge_pairs.push_back(std::move(pair));
    }
  } else if (model.contains("vocab")) {
    add_vocab(model["vocab"], tj_path.string());
    for (const auto& m : model.value("merges", json::array())) {
      std::pair<std::string, std::string> pair;
      if (m.is_string() && split_merge(m.get<std::string>(), pair))
        merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      else
        throw Error(tj_path.string() + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
      if (m.is_array()) pair = {m[0].get<std::string>(), m[1].get<std::string>()};
      merge_pairs.push_back(std::move(pair));
    }
  } else {
    throw Error(dir_name + ": no vocab.json (nor a tokenizer.json with a vocabulary)");
  }
  if (merges.empty()) throw Error(dir_name + ": no merges");

  // Added tokens (their text is raw text, not byte-level); they take over an id they share.
  std::map<int64_t, std::pair<std::string, bool>> added;  // id -> (content, special)
  if (tj.is_object())
    for (const auto& a : tj.value("added_tokens", json::array()))
      added[a.at("id").get<int64_t>()] = {a.at("content").get<std::string>(),
                                          a.value("special", false)};
  const json decoder = cfg.value("added_tokens_decoder", json::object());
  for (const auto& [id, a] : decoder.items())
    added[std::stoll(id)] = {a.at("content").get<std::string>(), a.value("special", false)};

  const int64_t n = std::max(by_id.empty() ? 0 : by_id.rbegin()->first + 1,
                             added.empty() ? 0 : added.rbegin()->first + 1);
  if (n > INT32_MAX) throw Error(dir_name + ": token ids are too large");
  std::vector<std::string> tokens(static_cast<size_t>(n));
  std::vector<int32_t> types(static_cast<size_t>(n), int32_t(TokenType::Unused));
  for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [id, text] : by_id) {
    tokens[size_t(id)] = text;
    types[size_t(id)] = int32_t(TokenType::Normal);
  }
  for (const auto& [id, a] : added) {
    if (id < 0) throw Error(dir_name + ": an added token has a negative id");
    tokens[size_t(id)] = a.first;
    types[size_t(id)] = int32_t(a.second ? TokenType::Control : TokenType::UserDefined);
  }

  HfImportSummary sum;
  GgufWriter w;
  w.add_string("general.name", fs::absolute(dir).filename().string());
  if (spm) {
    write_spm(tj, tj_path.string(), merge_pairs, tokens, types, sum, w);
  } else {
    choose_pre(tj, tj_path.string(), dir_name, model.value("ignore_merges", false), options, sum,
               w);
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_string_array("tokenizer.ggml.merges", merges);
  }
  std::map<std::string, int64_t> id_of;
  for (int64_t i = 0; i < n; ++i)
    if (types[size_t(i)] != int32_t(TokenType::Unused)) id_of.emplace(tokens[size_t(i)], i);
  const std::pair<const char*, const char*> special_keys[] = {
      {"bos_token", "tokenizer.ggml.bos_token_id"},
      {"eos_token", "tokenizer.ggml.eos_token_id"},
      {"pad_token", "tokenizer.ggml.padding_token_id"},
      {"unk_token", "tokenizer.ggml.unknown_token_id"},
  };
  for (const auto& [cfg_key, gguf_key] : special_keys) {
    std::string text = config_token(cfg, cfg_key);
    if (text.empty() && spm && std::string(cfg_key) == "unk_token" && model.contains("unk_token") &&
        model["unk_token"].is_string())
      text = model["unk_token"].get<std::string>();  // SentencePiece: the model's own <unk>
    if (text.empty()) continue;
    const auto it = id_of.find(text);
    if (it == id_of.end())
      throw Error(cfg_path.string() + ": " + cfg_key + " '" + excerpt(text) + "' is not a token");
    w.add_u32(gguf_key, uint32_t(it->second));
  }
  for (const char* key : {"add_bos_token", "add_eos_token"})
    if (cfg.contains(key) && cfg[key].is_boolean())
      w.add_bool(std::string("tokenizer.ggml.") + key, cfg[key].get<bool>());
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
    w.add_string("tokenizer.chat_template", cfg["chat_template"].get<std::string>());
  w.write(out_path);

  sum.n_tokens = int(n);
  sum.n_merges = int(merges.size());
  sum.n_added = int(added.size());
  return sum;
}

}  // namespace

HfImportSummary import_hf_tokenizer(const std::string& dir, const std::string& out_path,
                                    const HfImportOptions& options) {
  try {
    return import_impl(dir, out_path, options);
  } catch (const json::exception& e) {  // a field of the wrong type, a missing field
    throw Error(dir + ": unexpected tokenizer files: " + excerpt(e.what()));
  } catch (const std::logic_error& e) {  // a non-numeric id (std::stoll)
    throw Error(dir + ": unexpected tokenizer files: " + excerpt(e.what()));
  }
}

}  // namespace tzero
