#include "lock/verify.h"

#include <set>

#include "base/excerpt.h"

namespace tzero::lock {

using json = nlohmann::json;

std::vector<EntryDiff> diff_entries(const json& locked, const json& now,
                                    const std::string& prefix) {
  std::vector<EntryDiff> out;
  if (locked.is_object() && now.is_object()) {
    std::set<std::string> keys;
    for (auto it = locked.begin(); it != locked.end(); ++it) keys.insert(it.key());
    for (auto it = now.begin(); it != now.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      const std::string path = prefix.empty() ? k : prefix + "." + k;
      const json a = locked.contains(k) ? locked[k] : json();
      const json b = now.contains(k) ? now[k] : json();
      for (EntryDiff& d : diff_entries(a, b, path)) out.push_back(std::move(d));
    }
    return out;
  }
  if (locked != now) out.push_back({prefix, locked, now});
  return out;
}

RequestVerdict compare_results(const LockEntry& entry, const LockResult& now) {
  RequestVerdict v;
  v.id = entry.request.id;
  v.where = entry.request.where;
  v.ran = true;
  v.locked = entry.result;
  v.now = now;
  const LockResult& a = entry.result;
  auto cmp = [&](const char* what, bool both, bool equal) {
    if (!both) return;
    v.compared.push_back(what);
    if (!equal) v.differs.push_back(what);
  };
  cmp("text", true, a.text == now.text);
  cmp("finish_reason", true, a.finish_reason == now.finish_reason);
  cmp("tokens", a.tokens && now.tokens, a.tokens && now.tokens && *a.tokens == *now.tokens);
  cmp("logits_digest", !a.logits_digest.empty() && !now.logits_digest.empty(),
      a.logits_digest == now.logits_digest);
  cmp("stop_reason", !a.stop_reason.empty() && !now.stop_reason.empty(),
      a.stop_reason == now.stop_reason);
  cmp("logprobs", a.logprobs && now.logprobs,
      a.logprobs && now.logprobs && *a.logprobs == *now.logprobs);
  if (a.tokens && now.tokens && *a.tokens != *now.tokens) {
    size_t k = 0;
    while (k < a.tokens->size() && k < now.tokens->size() && (*a.tokens)[k] == (*now.tokens)[k])
      ++k;
    v.first_token = int(k);
  }
  v.identical = v.differs.empty();
  return v;
}

std::string verdict_line(const RequestVerdict& v) {
  const std::string id = excerpt(v.id);  // the lock file's text: one line, escaped
  if (!v.ran) return id + ": not verified";
  if (v.identical) {
    std::string s = id + ": identical (";
    for (size_t i = 0; i < v.compared.size(); ++i) s += (i ? ", " : "") + v.compared[i];
    return s + ")";
  }
  std::string s = id + ": DRIFTED:";
  for (const std::string& d : v.differs) s += " " + d;
  if (v.first_token >= 0) s += "; first differing token #" + std::to_string(v.first_token);
  const Explanation& e = v.explanation;
  if (e.found) {
    s += "; first op that changed: position " + std::to_string(e.pos) + ", " +
         (e.layer < 0 ? std::string() : "layer " + std::to_string(e.layer) + ", ") + e.op;
    if (!e.description.empty()) s += " (" + e.description + ")";
  }
  if (!e.note.empty()) s += "; " + e.note;
  return s;
}

namespace {
json result_or_null(const LockResult& r, bool ran) {
  return ran ? result_json(r) : json();
}
}  // namespace

json verify_json(const VerifyReport& r) {
  json j;
  j["lock"] = r.lock_path;
  j["complete"] = r.complete;
  if (!r.interrupted.empty()) j["interrupted"] = r.interrupted;
  j["total"] = r.verdicts.size();
  j["verified"] = r.done;
  j["identical"] = r.identical;
  j["drifted"] = r.drifted;
  j["lock_source"] = r.lock_source;
  j["now_source"] = r.now_source;
  j["fingerprint"] = {{"lock", r.lock_fingerprint}, {"now", r.now_fingerprint}};
  auto diffs = [](const std::vector<EntryDiff>& ds) {
    json a = json::array();
    for (const EntryDiff& d : ds) a.push_back({{"key", d.key}, {"lock", d.locked}, {"now", d.now}});
    return a;
  };
  j["manifest_differs"] = diffs(r.manifest);
  j["environment_differs"] = diffs(r.environment);
  json reqs = json::array();
  for (const RequestVerdict& v : r.verdicts) {
    json e = {{"id", v.id}, {"where", v.where}};
    if (!v.ran) {
      e["status"] = "not_verified";
      reqs.push_back(e);
      continue;
    }
    e["status"] = v.identical ? "identical" : "drifted";
    e["compared"] = v.compared;
    e["differs"] = v.differs;
    if (v.first_token >= 0) e["first_differing_token"] = v.first_token;
    if (!v.identical) {
      e["lock_result"] = result_or_null(v.locked, true);
      e["now_result"] = result_or_null(v.now, true);
    }
    const Explanation& x = v.explanation;
    if (x.attempted) {
      json ej = {{"found", x.found}};
      if (x.found) {
        ej["pos"] = x.pos;
        ej["layer"] = x.layer;
        ej["op"] = x.op;
        if (!x.description.empty()) ej["description"] = x.description;
      }
      if (!x.note.empty()) ej["note"] = x.note;
      e["first_change"] = ej;
    }
    reqs.push_back(e);
  }
  j["requests"] = reqs;
  return j;
}

}  // namespace tzero::lock
