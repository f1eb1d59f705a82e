#include "tokenizer/hf_import_spm.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/error.h"
#include "base/excerpt.h"
#include "tokenizer/hf_pipeline.h"

namespace tzero {

namespace {

using nlohmann::json;

constexpr const char* kMark = "\xE2\x96\x81";  // U+2581 "▁"

bool mentions(const json& node, const char* type) {
  if (node.is_object()) {
    if (node.value("type", json()) == type) return true;
    for (const auto& [k, v] : node.items())
      if (mentions(v, type)) return true;
  } else if (node.is_array()) {
    for (const auto& v : node)
      if (mentions(v, type)) return true;
  }
  return false;
}

// The pre-tokenizer steps, flattened out of Sequences.
void flatten(const json& node, std::vector<json>& out) {
  if (node.is_null()) return;
  if (node.is_object() && node.value("type", json()) == "Sequence") {
    for (const auto& sub : node.value("pretokenizers", json::array())) flatten(sub, out);
    return;
  }
  out.push_back(node);
}

}  // namespace

bool is_spm_style(const json& tj) {
  if (mentions(tj.value("pre_tokenizer", json()), "ByteLevel")) return false;
  const json model = tj.value("model", json::object());
  if (model.value("byte_fallback", false)) return true;
  if (mentions(tj.value("pre_tokenizer", json()), "Metaspace")) return true;
  const std::string normalizer = tj.value("normalizer", json()).dump();
  return normalizer.find(kMark) != std::string::npos;
}

bool spm_add_space_prefix(const json& tj, const std::string& where) {
  bool replaces = false, prepends = false;
  int index = 0;
  for (const NormStep& s : parse_hf_normalizer(tj.value("normalizer", json()), where)) {
    ++index;
    const std::string what =
        where + ": normalizer step " + std::to_string(index) + " '" + norm_step_name(s.kind) + "'";
    if (s.kind == NormStep::Kind::Replace && s.pattern == escape_regex_literal(" ") &&
        s.content == kMark && !replaces) {
      replaces = true;
    } else if (s.kind == NormStep::Kind::Prepend && s.content == kMark && !prepends) {
      prepends = true;
    } else {
      throw Error(what +
                  " is not supported in a SentencePiece-style tokenizer.json (supported: "
                  "Replace(\" \" -> \"\xE2\x96\x81\") and Prepend(\"\xE2\x96\x81\"), once each)");
    }
  }
  std::vector<json> steps;
  flatten(tj.value("pre_tokenizer", json()), steps);
  bool metaspace = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const json& st = steps[i];
    const std::string type = st.is_object() ? st.value("type", "") : "";
    const std::string what =
        where + ": pre_tokenizer step " + std::to_string(i + 1) + " '" + excerpt(type) + "'";
    if (type == "Metaspace" && !replaces && !metaspace) {
      if (st.value("replacement", "") != kMark)
        throw Error(what + " with a replacement other than \"\xE2\x96\x81\" is not supported");
      if (st.value("split", false))
        throw Error(what +
                    " with split true is not supported (tzero's SentencePiece tokenizer "
                    "does not cut words at every \"\xE2\x96\x81\")");
      std::string scheme = st.value("prepend_scheme", "");
      if (scheme.empty()) scheme = st.value("add_prefix_space", true) ? "always" : "never";
      if (scheme != "always" && scheme != "first" && scheme != "never")
        throw Error(what + " with prepend_scheme '" + excerpt(scheme) + "' is not supported");
      prepends = scheme != "never";
      metaspace = replaces = true;
      continue;
    }
    const json pat = st.is_object() ? st.value("pattern", json()) : json();
    if (type == "Split" && replaces && !metaspace && pat.is_object() &&
        pat.value("String", json()) == " " && !st.value("invert", false))
      continue;  // after Replace(" " -> "▁") no space is left to split at
    throw Error(what +
                " is not supported in a SentencePiece-style tokenizer.json (supported: "
                "Metaspace with split false, or a Split at \" \" after the normalizer "
                "replaced every space)");
  }
  if (!replaces)
    throw Error(where +
                ": a SentencePiece-style tokenizer.json needs the normalizer Replace(\" \" -> "
                "\"\xE2\x96\x81\") or a Metaspace pre-tokenizer");
  return prepends;
}

std::vector<float> spm_scores_from_merges(
    const std::vector<std::string>& tokens,
    const std::vector<std::pair<std::string, std::string>>& merges) {
  std::unordered_map<std::string_view, size_t> id_of;
  id_of.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) id_of.emplace(tokens[i], i);
  const float none = -float(merges.size() + 1);
  std::vector<float> scores(tokens.size(), none);
  std::vector<bool> scored(tokens.size(), false);
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    joined = merges[rank].first + merges[rank].second;
    const auto it = id_of.find(joined);
    if (it == id_of.end() || scored[it->second]) continue;
    scores[it->second] = -float(rank);
    scored[it->second] = true;
  }
  return scores;
}

}  // namespace tzero
