#include "probe/report.h"

#include <cstdio>
#include <sstream>

#include "base/excerpt.h"

namespace tzero::probe {

namespace {
using oj = nlohmann::ordered_json;

oj opt_pos(const std::optional<size_t>& p) {
  return p ? oj(*p) : oj(nullptr);
}

oj error_json(const RequestError& e) {
  return {{"status", e.status == 0 ? oj(nullptr) : oj(e.status)}, {"message", e.message}};
}

oj groups_json(const std::vector<ErrorGroup>& groups) {
  oj a = oj::array();
  for (const auto& g : groups)
    a.push_back({{"status", g.status == 0 ? oj(nullptr) : oj(g.status)},
                 {"message", g.message},
                 {"count", g.count}});
  return a;
}

oj series_json(const SeriesResult& s, bool logprobs) {
  oj j;
  j["temperature"] = s.temperature;
  if (s.seed) j["seed"] = *s.seed;
  j["identical"] = s.summary.identical;
  j["compared"] = s.compared();
  j["failed_runs"] = s.failed_runs;
  j["unique_outputs"] = s.summary.unique_outputs;
  j["first_divergence"] = opt_pos(s.summary.first_divergence);
  j["max_logprob_diff"] = logprobs ? oj(s.summary.max_logprob_diff) : oj(nullptr);
  j["runs"] = s.runs.size();
  j["diverged_runs"] = s.summary.diverged_runs;
  oj modes = oj::object();
  for (const auto& [name, m] : s.modes)
    modes[name] = {{"runs", m.runs},
                   {"diverged", m.diverged},
                   {"failed", m.failed},
                   {"p50_ms", m.p50_ms},
                   {"p99_ms", m.p99_ms}};
  j["modes"] = modes;
  const bool has_ref = s.reference < s.runs.size();
  j["reference_text"] = has_ref ? oj(s.runs[s.reference].out.text) : oj(nullptr);
  j["reference_run"] =
      has_ref ? oj({{"mode", s.runs[s.reference].mode}, {"run", s.runs[s.reference].index + 1}})
              : oj(nullptr);
  oj details = oj::array();
  for (const auto& run : s.runs) {
    oj d;
    d["mode"] = run.mode;
    d["run"] = run.index + 1;
    if (run.error) {  // not compared
      d["identical"] = nullptr;
      d["first_divergence"] = nullptr;
      d["error"] = error_json(*run.error);
      details.push_back(d);
      continue;
    }
    d["identical"] = run.vs_reference.identical;
    d["first_divergence"] = opt_pos(run.vs_reference.first_divergence);
    if (logprobs) d["max_logprob_diff"] = run.vs_reference.max_logprob_diff;
    d["latency_ms"] = run.out.latency_ms;
    d["tokens"] = run.out.tokens.size();
    d["finish_reason"] = run.out.finish_reason;
    d["system_fingerprint"] =
        run.out.system_fingerprint.empty() ? oj(nullptr) : oj(run.out.system_fingerprint);
    if (!run.vs_reference.identical) d["text"] = run.out.text;
    details.push_back(d);
  }
  j["run_details"] = details;
  return j;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Cuts a prompt to n bytes for a table cell (not inside a UTF-8 sequence), newlines as spaces.
std::string cell(const std::string& s, size_t n) {
  std::string o;
  for (char c : s) o += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (o.size() <= n) return o;
  size_t cut = n - 3;
  while (cut > 0 && (static_cast<unsigned char>(o[cut]) & 0xC0) == 0x80) --cut;
  return o.substr(0, cut) + "...";
}

std::string pad(const std::string& s, size_t w) {
  size_t chars = 0;  // display width, roughly: UTF-8 lead bytes
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return s + std::string(chars < w ? w - chars : 1, ' ');
}
}  // namespace

oj probe_json(const ProbeReport& r) {
  oj j;
  j["tool"] = "tzero probe";
  j["version"] = TZ_VERSION;
  j["identical"] = r.identical && r.comparable;
  j["comparable"] = r.comparable;
  j["logprobs"] = r.logprobs;
  if (!r.logprobs_refused.empty()) j["logprobs_refused"] = r.logprobs_refused;
  j["divergence_unit"] = r.logprobs ? "token" : "byte";
  const auto& o = r.options;
  oj cfg;
  cfg["base_url"] = o.base_url;
  cfg["endpoint"] = r.endpoint;
  cfg["model"] = o.model;
  cfg["chat"] = o.chat;
  cfg["runs"] = o.runs;
  cfg["concurrency"] = o.concurrency;
  cfg["max_tokens"] = o.max_tokens;
  cfg["top_logprobs"] = o.top_logprobs;
  cfg["timeout_s"] = o.timeout_s;
  cfg["sampled_temperature"] = o.sampled_temperature;
  cfg["seed"] = o.seed;
  oj modes = oj::array();
  for (const auto& [name, m] : r.modes) modes.push_back(name);
  cfg["modes"] = modes;
  j["configuration"] = cfg;
  oj fps = oj::array();
  for (const auto& [v, n] : r.fingerprints) fps.push_back({{"value", v}, {"runs", n}});
  j["system_fingerprints"] = fps;
  j["runs_without_fingerprint"] = r.runs_without_fingerprint;
  oj prompts = oj::array();
  for (const auto& p : r.prompts) {
    oj pj;
    pj["prompt"] = p.prompt;
    pj["identical"] = p.identical();
    const oj greedy = series_json(p.series[0], r.logprobs);
    for (auto it = greedy.begin(); it != greedy.end(); ++it) pj[it.key()] = it.value();
    if (p.series.size() > 1) pj["seeded"] = series_json(p.series[1], r.logprobs);
    prompts.push_back(pj);
  }
  j["prompts"] = prompts;
  oj lat = oj::object();
  for (const auto& [name, m] : r.modes)
    lat[name] = {{"runs", m.runs}, {"p50", m.p50_ms}, {"p99", m.p99_ms}};
  j["latency_ms"] = lat;
  j["requests"] = r.requests;
  j["failed_requests"] = r.failed_requests;
  std::vector<RequestError> errors;
  for (const auto& p : r.prompts)
    for (const auto& sr : p.series)
      for (const auto& run : sr.runs)
        if (run.error) errors.push_back(*run.error);
  j["errors"] = groups_json(group_errors(errors));
  j["filler_requests"] = r.filler_requests;
  j["filler_errors"] = r.filler_errors;
  j["filler_error_reasons"] = groups_json(group_errors(r.filler_failures));
  j["retries"] = r.retries;
  j["wall_s"] = r.wall_s;
  return j;
}

std::string probe_table(const ProbeReport& r) {
  std::ostringstream s;
  const auto& o = r.options;
  s << "tzero probe: " << r.endpoint << ", model " << o.model << ", " << r.prompts.size()
    << " prompt(s) x " << o.runs << " run(s) per mode";
  if (o.concurrency > 0) s << " (loaded: " << o.concurrency << " concurrent fillers)";
  s << "; " << (r.logprobs ? "tokens and logprobs compared bit for bit" : "texts compared")
    << "\n\n";
  std::vector<std::string> modes;
  for (const auto& [name, m] : r.modes) modes.push_back(name);
  s << pad("prompt", 30) << pad("sampling", 17) << pad("unique", 7) << pad("first div", 10)
    << pad("max |dlogprob|", 15);
  for (const auto& m : modes) s << pad(m + " p50/p99 ms", 20);
  s << "\n";
  for (const auto& p : r.prompts)
    for (size_t k = 0; k < p.series.size(); ++k) {
      const SeriesResult& sr = p.series[k];
      std::string sampling = sr.name == "greedy" ? "t=0" : fmt("t=%g", sr.temperature);
      if (sr.seed) sampling += " seed=" + std::to_string(*sr.seed);
      s << pad(k == 0 ? cell(p.prompt, 28) : "", 30) << pad(sampling, 17)
        << pad(sr.compared() ? std::to_string(sr.summary.unique_outputs) : "n/a", 7)
        << pad(sr.summary.first_divergence ? std::to_string(*sr.summary.first_divergence) : "-", 10)
        << pad(r.logprobs ? fmt("%.3g", sr.summary.max_logprob_diff) : "n/a", 15);
      for (const auto& m : modes) {
        auto it = sr.modes.find(m);
        std::string v = it == sr.modes.end()
                            ? "-"
                            : fmt("%.1f", it->second.p50_ms) + "/" + fmt("%.1f", it->second.p99_ms);
        if (it != sr.modes.end() && it->second.diverged)
          v += " (" + std::to_string(it->second.diverged) + " diff)";
        if (it != sr.modes.end() && it->second.failed)
          v += " (" + std::to_string(it->second.failed) + " failed)";
        s << pad(v, 20);
      }
      s << "\n";
    }
  s << "\nsystem_fingerprint: ";
  if (r.fingerprints.empty()) s << "none reported";
  bool first = true;
  for (const auto& [v, n] : r.fingerprints) {
    s << (first ? "" : ", ") << excerpt(v) << " (" << n << " runs)";  // the server's text
    first = false;
  }
  if (r.fingerprints.size() > 1)
    s << "  <- several fingerprints: the backend changed during the probe";
  s << "\n";
  if (!r.logprobs)
    s << "logprobs: not reported by the server"
      << (r.logprobs_refused.empty() ? "" : " (refused: " + r.logprobs_refused + ")")
      << "; first divergences are byte offsets into the text\n";
  std::vector<RequestError> errors;
  int runs = 0, diverged_prompts = 0, uncompared = 0;
  for (const auto& p : r.prompts) {
    for (const auto& sr : p.series) {
      runs += int(sr.runs.size());
      uncompared += !sr.compared();
      for (const auto& run : sr.runs)
        if (run.error) errors.push_back(*run.error);
    }
    diverged_prompts += !p.identical();
  }
  if (r.filler_errors)
    s << r.filler_errors
      << " filler request(s) failed: " << describe_errors(group_errors(r.filler_failures)) << "\n";
  if (!errors.empty())
    s << errors.size() << " probed request(s) failed (recorded, not compared): "
      << describe_errors(group_errors(errors)) << "\n";
  if (uncompared && r.comparable)
    s << uncompared << " prompt/sampling series had fewer than two answers: not compared\n";
  if (!r.comparable)
    s << "NOTHING COMPARED: no prompt and sampling had two runs that answered\n";
  else if (r.identical)
    s << "IDENTICAL: every run "
      << (errors.empty() ? "of every prompt matched its first solo run "
                         : "that answered matched its reference ")
      << (r.logprobs ? "bit for bit" : "(text)") << " (" << runs - int(errors.size()) << " runs)\n";
  else
    s << "DIVERGED: " << diverged_prompts << " of " << r.prompts.size()
      << " prompt(s) gave more than one output\n";
  return s.str();
}

}  // namespace tzero::probe
