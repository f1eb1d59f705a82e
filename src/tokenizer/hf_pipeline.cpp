#include "tokenizer/hf_pipeline.h"

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "tokenizer/regex.h"

namespace tzero {

namespace {

using nlohmann::json;

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
  } else if (cp < 0x10000) {
    out += {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
  } else {
    out += {char(0xF0 | (cp >> 18)), char(0x80 | ((cp >> 12) & 0x3F)),
            char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
  }
}

// A control character as the escape the comparison uses for it.
void append_control(unsigned char c, std::string& out) {
  if (c == '\r') {
    out += "\\r";
  } else if (c == '\n') {
    out += "\\n";
  } else if (c == '\t') {
    out += "\\t";
  } else {
    static const char* const kHex = "0123456789ABCDEF";
    out += "\\x{";
    out += kHex[c >> 4];
    out += kHex[c & 15];
    out += '}';
  }
}

// A regular expression in a form where spellings that mean the same compare equal: \x{H}
// escapes of non-ASCII characters (used by the named table) become the character, and control
// characters, literal (as some tokenizer.json files write CR and LF inside classes) or escaped,
// one escape each.
std::string canonical_regex(std::string_view re) {
  std::string out;
  for (size_t i = 0; i < re.size(); ++i) {
    const auto c = static_cast<unsigned char>(re[i]);
    if (c == '\\' && i + 2 < re.size() && re[i + 1] == 'x' && re[i + 2] == '{') {
      const size_t close = re.find('}', i + 3);
      const std::string hex(re.substr(i + 3, close == std::string_view::npos ? 0 : close - i - 3));
      if (close != std::string_view::npos && !hex.empty() && hex.size() <= 6 &&
          hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
        const auto cp = uint32_t(std::stoul(hex, nullptr, 16));
        if (cp < 0x20)
          append_control(static_cast<unsigned char>(cp), out);
        else if (cp >= 0x80)
          append_utf8(cp, out);
        else
          out.append(re.substr(i, close - i + 1));
        i = close;
        continue;
      }
    }
    if (c == '\\' && i + 1 < re.size()) {
      out += re.substr(i, 2);
      ++i;
    } else if (c < 0x20) {
      append_control(c, out);
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string type_of(const json& node) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) return "";
  return node["type"].get<std::string>();
}

// A Split / Replace pattern: {"String": s} (a literal) or {"Regex": r}, as a PCRE2 expression.
std::string pattern_of(const json& node, const std::string& what) {
  const json pat = node.value("pattern", json());
  if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string())
    return pat["Regex"].get<std::string>();
  if (pat.is_object() && pat.contains("String") && pat["String"].is_string())
    return escape_regex_literal(pat["String"].get<std::string>());
  throw Error(what + " has a pattern that is neither {\"String\": ...} nor {\"Regex\": ...}");
}

bool flag_of(const json& node, const char* key, bool fallback, const std::string& what) {
  if (!node.contains(key) || node[key].is_null()) return fallback;
  if (!node[key].is_boolean()) throw Error(what + ": '" + key + "' is not true or false");
  return node[key].get<bool>();
}

std::string string_of(const json& node, const char* key, const std::string& what) {
  if (!node.contains(key) || !node[key].is_string())
    throw Error(what + ": '" + key + "' is missing or not a string");
  return node[key].get<std::string>();
}

void check_compiles(const std::string& pattern, const std::string& what) {
  try {
    Regex r(pattern, false);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());  // the regex is quoted through excerpt() there
  }
}

void add_normalizer(const json& node, const std::string& where, std::vector<NormStep>& out,
                    int& index) {
  if (node.is_null()) return;
  const std::string type = type_of(node);
  if (type == "Sequence") {
    const json subs = node.value("normalizers", json());
    if (!subs.is_array()) throw Error(where + ": normalizer Sequence has no 'normalizers' list");
    for (const auto& sub : subs) add_normalizer(sub, where, out, index);
    return;
  }
  ++index;
  const std::string what = where + ": normalizer step " + std::to_string(index) + " '" +
                           (type.empty() ? std::string("(no type)") : excerpt(type)) + "'";
  NormStep s;
  if (type == "NFC") {
    s.kind = NormStep::Kind::NFC;
  } else if (type == "NFD") {
    s.kind = NormStep::Kind::NFD;
  } else if (type == "NFKC") {
    s.kind = NormStep::Kind::NFKC;
  } else if (type == "NFKD") {
    s.kind = NormStep::Kind::NFKD;
  } else if (type == "Lowercase") {
    s.kind = NormStep::Kind::Lowercase;
  } else if (type == "Strip") {
    s.kind = NormStep::Kind::Strip;
    s.left = flag_of(node, "strip_left", false, what);
    s.right = flag_of(node, "strip_right", false, what);
  } else if (type == "Prepend") {
    s.kind = NormStep::Kind::Prepend;
    s.content = string_of(node, "prepend", what);
  } else if (type == "Replace") {
    s.kind = NormStep::Kind::Replace;
    s.pattern = pattern_of(node, what);
    s.content = string_of(node, "content", what);
    check_compiles(s.pattern, what);
  } else {
    throw Error(what +
                " is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                "Prepend, Replace, Sequence)");
  }
  out.push_back(std::move(s));
}

void add_pre_step(const json& node, const std::string& where, std::vector<PreStep>& out,
                  int& index) {
  if (node.is_null()) return;
  const std::string type = type_of(node);
  if (type == "Sequence") {
    const json subs = node.value("pretokenizers", json());
    if (!subs.is_array())
      throw Error(where + ": pre_tokenizer Sequence has no 'pretokenizers' list");
    for (const auto& sub : subs) add_pre_step(sub, where, out, index);
    return;
  }
  ++index;
  const std::string what = where + ": pre_tokenizer step " + std::to_string(index) + " '" +
                           (type.empty() ? std::string("(no type)") : excerpt(type)) + "'";
  auto behavior_of = [&](SplitBehavior fallback) {
    if (!node.contains("behavior")) return fallback;
    const json& b = node["behavior"];
    SplitBehavior out_b;
    if (!b.is_string() || !parse_split_behavior(b.get<std::string>(), out_b))
      throw Error(what + " with behavior '" +
                  excerpt(b.is_string() ? b.get<std::string>() : b.dump()) +
                  "' is not supported (supported: Removed, Isolated, MergedWithPrevious, "
                  "MergedWithNext, Contiguous)");
    return out_b;
  };
  PreStep s;
  if (type == "Split") {
    s.kind = PreStep::Kind::Split;
    s.regex = pattern_of(node, what);
    s.behavior = behavior_of(SplitBehavior::Isolated);
    s.invert = flag_of(node, "invert", false, what);
    check_compiles(s.regex, what);
  } else if (type == "CharDelimiterSplit") {
    s.kind = PreStep::Kind::Split;
    s.regex = escape_regex_literal(string_of(node, "delimiter", what));
    s.behavior = SplitBehavior::Removed;
  } else if (type == "Digits") {
    s.kind = PreStep::Kind::Digits;
    s.flag = flag_of(node, "individual_digits", false, what);
  } else if (type == "Punctuation") {
    s.kind = PreStep::Kind::Punctuation;
    s.behavior = behavior_of(SplitBehavior::Isolated);
  } else if (type == "Whitespace") {
    s.kind = PreStep::Kind::Whitespace;
  } else if (type == "WhitespaceSplit") {
    s.kind = PreStep::Kind::WhitespaceSplit;
  } else if (type == "ByteLevel") {
    s.kind = PreStep::Kind::ByteLevel;
    s.add_prefix_space = flag_of(node, "add_prefix_space", true, what);
    s.flag = flag_of(node, "use_regex", true, what);
  } else if (type == "Metaspace") {
    throw Error(what +
                " is not supported in a byte-level pipeline (a SentencePiece-style "
                "tokenizer.json, with byte_fallback and no ByteLevel step, may use it)");
  } else {
    throw Error(what +
                " is not supported (supported: Split, CharDelimiterSplit, Digits, "
                "Punctuation, Whitespace, WhitespaceSplit, ByteLevel, Sequence)");
  }
  out.push_back(std::move(s));
}

}  // namespace

std::vector<NormStep> parse_hf_normalizer(const json& node, const std::string& where) {
  std::vector<NormStep> out;
  int index = 0;
  add_normalizer(node, where, out, index);
  return out;
}

std::vector<PreStep> parse_hf_pre_tokenizer(const json& node, const std::string& where) {
  std::vector<PreStep> out;
  int index = 0;
  add_pre_step(node, where, out, index);
  return out;
}

PreTokenizerSpec parse_hf_pipeline(const json& normalizer, const json& pre_tokenizer,
                                   bool ignore_merges, const std::string& where) {
  PreTokenizerSpec spec;
  spec.name = kPipelinePreName;
  spec.normalizers = parse_hf_normalizer(normalizer, where);
  spec.steps = parse_hf_pre_tokenizer(pre_tokenizer, where);
  spec.ignore_merges = ignore_merges;
  int n_byte_level = 0;
  for (const PreStep& s : spec.steps) n_byte_level += s.kind == PreStep::Kind::ByteLevel;
  if (n_byte_level == 0)
    throw Error(where +
                ": the pre_tokenizer has no ByteLevel step: neither byte-level BPE nor "
                "SentencePiece-style BPE (byte_fallback, Metaspace or a normalizer writing "
                "\"\xE2\x96\x81\")");
  if (n_byte_level > 1)
    throw Error(where + ": the pre_tokenizer has " + std::to_string(n_byte_level) +
                " ByteLevel steps; a byte-level BPE pipeline needs exactly one");
  return spec;
}

const PreTokenizerSpec* find_equal_named_spec(const PreTokenizerSpec& spec) {
  auto canonical = [](std::vector<PreStep> steps) {
    for (auto& s : steps) s.regex = canonical_regex(s.regex);
    return steps;
  };
  auto canonical_norm = [](std::vector<NormStep> steps) {
    for (auto& s : steps) s.pattern = canonical_regex(s.pattern);
    return steps;
  };
  const std::vector<PreStep> mine = canonical(spec.steps);
  const std::vector<NormStep> my_norm = canonical_norm(spec.normalizers);
  for (const PreTokenizerSpec& named : pre_tokenizer_specs())
    if (canonical(named.steps) == mine && canonical_norm(named.normalizers) == my_norm &&
        named.ignore_merges == spec.ignore_merges)
      return &named;
  return nullptr;
}

std::string pipeline_metadata(const json& normalizer, const json& pre_tokenizer,
                              bool ignore_merges) {
  return json{{"version", 1},
              {"normalizer", normalizer},
              {"pre_tokenizer", pre_tokenizer},
              {"ignore_merges", ignore_merges}}
      .dump();
}

PreTokenizerSpec parse_pipeline_metadata(std::string_view text, const std::string& where) {
  json j;
  try {
    j = parse_json_bounded(text);
  } catch (const json::exception& e) {
    throw Error(where + ": not valid JSON: " + excerpt(e.what()));
  }
  if (!j.is_object() || j.value("version", json()) != json(1))
    throw Error(where + ": not a version 1 pipeline object");
  try {
    return parse_hf_pipeline(j.value("normalizer", json()), j.value("pre_tokenizer", json()),
                             j.value("ignore_merges", false), where);
  } catch (const json::exception& e) {
    throw Error(where + ": unexpected pipeline: " + excerpt(e.what()));
  }
}

}  // namespace tzero
