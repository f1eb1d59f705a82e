#include "tokenizer/hf_import.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "format/gguf_writer.h"
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
    return json::parse(read_all(p));
  } catch (const json::exception& e) {
    throw Error(p.string() + ": not valid JSON: " + e.what());
  }
}

// A regular expression in a form where spellings that mean the same compare equal: \x{H}
// escapes (used by our table for non-ASCII) become the character, and literal CR and LF (used
// by some tokenizer.json files inside classes) become the escapes \r and \n.
std::string canonical_regex(std::string_view re) {
  std::string out;
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '\\' && i + 2 < re.size() && re[i + 1] == 'x' && re[i + 2] == '{') {
      const size_t close = re.find('}', i + 3);
      if (close != std::string_view::npos) {
        const uint32_t cp =
            uint32_t(std::stoul(std::string(re.substr(i + 3, close - i - 3)), nullptr, 16));
        if (cp < 0x80) {
          out += char(cp);
        } else if (cp < 0x800) {
          out += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
        } else if (cp < 0x10000) {
          out +=
              {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
        } else {
          out += {char(0xF0 | (cp >> 18)), char(0x80 | ((cp >> 12) & 0x3F)),
                  char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
        }
        i = close;
        continue;
      }
    }
    if (re[i] == '\\' && i + 1 < re.size()) {
      out += re.substr(i, 2);
      ++i;
    } else if (re[i] == '\r') {
      out += "\\r";
    } else if (re[i] == '\n') {
      out += "\\n";
    } else {
      out += re[i];
    }
  }
  return out;
}

// tokenizer.json's pre_tokenizer as our steps. Returns false (with `why`) for anything our
// table cannot express.
bool parse_steps(const json& node, std::vector<PreStep>& steps, std::string& why) {
  if (node.is_null()) return true;
  const std::string type = node.value("type", "");
  if (type == "Sequence") {
    for (const auto& sub : node.value("pretokenizers", json::array()))
      if (!parse_steps(sub, steps, why)) return false;
    return true;
  }
  if (type == "Split") {
    const json& pat = node.value("pattern", json::object());
    if (!pat.contains("Regex") || node.value("behavior", "") != "Isolated" ||
        node.value("invert", false)) {
      why = "a Split that is not an Isolated regular expression";
      return false;
    }
    const std::string re = canonical_regex(pat["Regex"].get<std::string>());
    steps.push_back({PreStep::Kind::Split, re, false});
    return true;
  }
  if (type == "Digits") {
    steps.push_back({PreStep::Kind::Digits, "", node.value("individual_digits", false)});
    return true;
  }
  if (type == "Punctuation") {
    if (node.value("behavior", "Isolated") != "Contiguous") {
      why = "Punctuation with a behaviour other than Contiguous";
      return false;
    }
    steps.push_back({PreStep::Kind::Punctuation, "", false});
    return true;
  }
  if (type == "ByteLevel") {
    if (node.value("add_prefix_space", false)) {
      why = "ByteLevel with add_prefix_space";
      return false;
    }
    steps.push_back({PreStep::Kind::ByteLevel, "", node.value("use_regex", true)});
    return true;
  }
  why = "the pre-tokenizer step '" + type + "'";
  return false;
}

// Whether a ByteLevel step appears anywhere in a pre_tokenizer node.
bool mentions_byte_level(const json& node) {
  if (node.is_object()) {
    if (node.value("type", json()) == "ByteLevel") return true;
    for (const auto& [k, v] : node.items())
      if (mentions_byte_level(v)) return true;
  } else if (node.is_array()) {
    for (const auto& v : node)
      if (mentions_byte_level(v)) return true;
  }
  return false;
}

// tokenizer.json's normalizer: 0 = none, 1 = NFC, -1 = something else.
int parse_normalizer(const json& node) {
  if (node.is_null()) return 0;
  const std::string type = node.value("type", "");
  if (type == "NFC") return 1;
  if (type == "Sequence") {
    int r = 0;
    for (const auto& sub : node.value("normalizers", json::array())) {
      const int k = parse_normalizer(sub);
      if (k < 0 || (k == 1 && r == 1)) return -1;
      r = std::max(r, k);
    }
    return r;
  }
  return -1;
}

std::string known_names() {
  std::string s;
  for (const auto& spec : pre_tokenizer_specs()) s += (s.empty() ? "" : ", ") + spec.name;
  return s;
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
    throw Error(tj_path.string() + ": model type '" + model.value("type", "") +
                "' is not BPE; only byte-level BPE tokenizers can be imported");

  // The base vocabulary: id -> text.
  std::map<int64_t, std::string> by_id;
  auto add_vocab = [&](const json& v, const std::string& where) {
    if (!v.is_object()) throw Error(where + ": the vocabulary is not a JSON object");
    for (const auto& [text, id] : v.items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        throw Error(where + ": token '" + text + "' has no valid id");
      if (!by_id.emplace(id.get<int64_t>(), text).second)
        throw Error(where + ": id " + std::to_string(id.get<int64_t>()) + " is used twice");
    }
  };
  std::vector<std::string> merges;
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
      if (!line.empty()) merges.push_back(line);
    }
  } else if (model.contains("vocab")) {
    add_vocab(model["vocab"], tj_path.string());
    for (const auto& m : model.value("merges", json::array())) {
      if (m.is_string())
        merges.push_back(m.get<std::string>());
      else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      else
        throw Error(tj_path.string() + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
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

  // The pre-tokenizer.
  HfImportSummary sum;
  std::string recognized, why;
  if (tj.is_object()) {
    std::vector<PreStep> steps;
    const bool expressible = parse_steps(tj.value("pre_tokenizer", json()), steps, why);
    if (!mentions_byte_level(tj.value("pre_tokenizer", json())))
      throw Error(tj_path.string() +
                  ": the pre-tokenizer has no ByteLevel step; only "
                  "byte-level BPE tokenizers can be imported");
    const int nfc = parse_normalizer(tj.value("normalizer", json()));
    const bool ignore_merges = model.value("ignore_merges", false);
    if (expressible && nfc >= 0) {
      for (const auto& spec : pre_tokenizer_specs()) {
        std::vector<PreStep> mine = spec.steps;
        for (auto& s : mine) s.regex = canonical_regex(s.regex);
        if (mine == steps && spec.nfc == (nfc == 1) && spec.ignore_merges == ignore_merges) {
          recognized = spec.name;
          break;
        }
      }
      if (recognized.empty()) why = "its steps, normalizer and ignore_merges match no known one";
    } else if (nfc < 0) {
      why = "its normalizer is not NFC or none";
    }
  }
  if (!options.pre.empty()) {
    if (!find_pre_tokenizer(options.pre))
      throw Error("--pre '" + options.pre +
                  "' is not a known pre-tokenizer (known: " + known_names() + ")");
    sum.pre = find_pre_tokenizer(options.pre)->name;
    sum.pre_source = "--pre";
    if (!recognized.empty() && recognized != sum.pre)
      std::fprintf(stderr, "warning: %s describes the pre-tokenizer '%s'; writing '%s' (--pre)\n",
                   tj_path.string().c_str(), recognized.c_str(), sum.pre.c_str());
  } else if (!recognized.empty()) {
    sum.pre = recognized;
    sum.pre_source = "tokenizer.json";
  } else if (tj.is_object()) {
    throw Error(tj_path.string() + ": cannot recognize the pre-tokenizer (" + why +
                "); give --pre NAME (known: " + known_names() + ")");
  } else {
    throw Error(dir_name +
                ": no tokenizer.json to tell the pre-tokenizer from; give --pre NAME "
                "(known: " +
                known_names() + ")");
  }

  GgufWriter w;
  w.add_string("general.name", fs::absolute(dir).filename().string());
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", sum.pre);
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", merges);
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
    const std::string text = config_token(cfg, cfg_key);
    if (text.empty()) continue;
    const auto it = id_of.find(text);
    if (it == id_of.end())
      throw Error(cfg_path.string() + ": " + cfg_key + " '" + text + "' is not a token");
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
    throw Error(dir + ": unexpected tokenizer files: " + e.what());
  } catch (const std::logic_error& e) {  // a non-numeric id (std::stoll)
    throw Error(dir + ": unexpected tokenizer files: " + e.what());
  }
}

}  // namespace tzero
