#include "trace/diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/bounded_json.h"

namespace tzero {

uint64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return uint64_t(d < 0 ? -d : d);
}

std::string terminal_safe(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {
// The metadata fields whose values differ (a field missing on one side differs too; metadata
// that is not a JSON object has no fields).
std::vector<std::string> metadata_differences(const std::string& a, const std::string& b) {
  const auto ja = parse_json_bounded_or_discarded(a);
  const auto jb = parse_json_bounded_or_discarded(b);
  std::vector<std::string> out;
  if (!ja.is_object() || !jb.is_object()) return out;
  for (const char* key : {"model", "fingerprint", "prompt"}) {
    const bool ha = ja.contains(key), hb = jb.contains(key);
    if (ha != hb || (ha && ja[key] != jb[key])) out.push_back(key);
  }
  return out;
}
}  // namespace

std::string_view op_description(std::string_view name) {
  static const std::map<std::string_view, std::string_view> words = {
      {"inp_embd", "the token embedding"},
      {"inp_scaled", "the scaled token embedding"},
      {"attn_norm", "the attention input norm"},
      {"Qcur", "the query projection"},
      {"Kcur", "the key projection"},
      {"Vcur", "the value projection"},
      {"kqv_out", "attention"},
      {"attn_out", "the attention output projection"},
      {"attn_post_norm", "the attention output norm"},
      {"ffn_inp", "the residual after attention"},
      {"ffn_norm", "the feed-forward input norm"},
      {"ffn_gate", "the feed-forward gate projection"},
      {"ffn_up", "the feed-forward up projection"},
      {"ffn_swiglu", "the SwiGLU activation"},
      {"ffn_geglu", "the GeGLU activation"},
      {"ffn_out", "the feed-forward output"},
      {"ffn_post_norm", "the feed-forward output norm"},
      {"ffn_moe_logits", "the expert router's logits"},
      {"ffn_moe_probs", "the expert router's softmax"},
      {"ffn_moe_topk", "the expert choice (top-k)"},
      {"ffn_moe_weights", "the chosen experts' weights"},
      {"ffn_moe_gate", "the experts' gate projections"},
      {"ffn_moe_up", "the experts' up projections"},
      {"ffn_moe_swiglu", "the experts' SwiGLU"},
      {"ffn_moe_down", "the experts' down projections"},
      {"ffn_moe_out", "the expert combine"},
      {"ffn_shexp", "the shared expert"},
      {"ffn_shexp_gate_inp", "the shared expert's gate"},
      {"ffn_shexp_out", "the gated shared expert"},
      {"l_out", "the layer output"},
      {"result_norm", "the final norm"},
      {"result_output", "the logits"},
  };
  const auto it = words.find(name);
  return it == words.end() ? std::string_view() : it->second;
}

TraceDiff diff_traces(const TraceFile& a, const TraceFile& b) {
  using Key = std::tuple<uint32_t, int32_t, std::string>;
  // Forward order of ops: the order of first appearance in trace A (then B).
  std::map<std::pair<int32_t, std::string>, size_t> rank;
  for (const auto* t : {&a, &b})
    for (const auto& r : t->records) rank.emplace(std::make_pair(r.layer, r.name), rank.size());
  std::map<Key, const TraceRecord*> in_b;
  for (const auto& r : b.records) in_b[{r.pos, r.layer, r.name}] = &r;

  TraceDiff d;
  d.truncated_a = a.truncated;
  d.truncated_b = b.truncated;
  d.metadata_differs = metadata_differences(a.metadata, b.metadata);
  std::map<Key, bool> seen_a;
  struct Hit {
    uint32_t pos;
    size_t rank;
    const TraceRecord* ra;
    const TraceRecord* rb;
  };
  std::vector<Hit> hits;
  std::map<int, TraceDiffRow> rows;
  for (const auto& r : a.records) {
    const Key k{r.pos, r.layer, r.name};
    if (seen_a.count(k)) continue;
    seen_a[k] = true;
    auto it = in_b.find(k);
    if (it == in_b.end()) {
      ++d.only_a;
      continue;
    }
    ++d.shared;
    const bool differs = r.hash != it->second->hash || r.n != it->second->n;
    if (differs) hits.push_back({r.pos, rank[{r.layer, r.name}], &r, it->second});
  }
  d.only_b = in_b.size() > d.shared ? in_b.size() - d.shared : 0;
  d.differing = hits.size();
  if (!hits.empty()) {
    const Hit first = *std::min_element(hits.begin(), hits.end(), [](const Hit& x, const Hit& y) {
      return std::tie(x.pos, x.rank) < std::tie(y.pos, y.rank);
    });
    d.has_first = true;
    d.first_pos = first.pos;
    d.first_layer = first.ra->layer;
    d.first_op = first.ra->name;
  }
  // Per-layer counts of records at or after the first divergence.
  for (const auto& r : a.records) {
    auto it = in_b.find({r.pos, r.layer, r.name});
    if (it == in_b.end() || !d.has_first) continue;
    if (std::make_pair(r.pos, rank[{r.layer, r.name}]) <
        std::make_pair(d.first_pos, rank[{d.first_layer, d.first_op}]))
      continue;
    TraceDiffRow& row = rows[r.layer];
    row.layer = r.layer;
    ++row.compared;
    if (r.hash != it->second->hash) {
      ++row.differing;
      if (std::find(row.ops.begin(), row.ops.end(), r.name) == row.ops.end())
        row.ops.push_back(r.name);
    }
  }
  for (auto& [layer, row] : rows) d.layers.push_back(row);
  for (const Hit& h : hits) {
    if (h.ra->values.empty() || h.rb->values.empty() || h.ra->values.size() != h.rb->values.size())
      continue;
    ValueDeviation v;
    v.name = h.ra->full_name();
    v.pos = h.pos;
    for (size_t i = 0; i < h.ra->values.size(); ++i) {
      const double x = h.ra->values[i], y = h.rb->values[i];
      if (std::isnan(x) || std::isnan(y)) {
        if (ulp_distance(h.ra->values[i], h.rb->values[i]) != 0) ++v.nan;
        continue;
      }
      const double abs = std::fabs(x - y);
      v.max_abs = std::max(v.max_abs, abs);
      if (std::fabs(x) > 0) v.max_rel = std::max(v.max_rel, abs / std::fabs(x));
      v.max_ulp = std::max(v.max_ulp, ulp_distance(h.ra->values[i], h.rb->values[i]));
    }
    d.deviations.push_back(v);
  }
  // Argmax of the logits, wherever both traces hold them.
  for (const auto& r : a.records) {
    if (r.name != "result_output" || r.values.empty()) continue;
    auto it = in_b.find({r.pos, r.layer, r.name});
    if (it == in_b.end() || it->second->values.size() != r.values.size()) continue;
    d.logits_compared = true;
    const auto am = [](const std::vector<float>& v) {
      return size_t(std::max_element(v.begin(), v.end()) - v.begin());
    };
    if (am(r.values) != am(it->second->values) && !d.argmax_changed) {
      d.argmax_changed = true;
      d.argmax_pos = r.pos;
    }
  }
  return d;
}

}  // namespace tzero
