// The probe's HTML report, in the style of the audit's (src/audit/audit_html.cpp): a summary, a
// table per prompt and sampling, the reference answers, three inline SVG charts
// (report_html_charts.cpp), the diverging runs with their differences marked and the failed
// requests (report_html_runs.cpp).
#include <cstdio>
#include <sstream>

#include "base/html.h"
#include "probe/report.h"
#include "probe/report_html_parts.h"

namespace tzero::probe {

namespace html {

std::string sci(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string short_text(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string sampling_label(const SeriesResult& s) {
  if (s.name == "greedy") return "t=0";
  return "t=" + fixed(s.temperature, 2) + (s.seed ? " seed=" + std::to_string(*s.seed) : "");
}

std::string series_label(const PromptResult& p, const SeriesResult& s, size_t index) {
  return "#" + std::to_string(index + 1) + " " + short_text(p.prompt, 24) + " (" +
         (s.name == "greedy" ? std::string("t=0") : "t=" + fixed(s.temperature, 2)) + ")";
}

const char* mode_color(const std::string& mode) {
  if (mode == "solo") return "#3a7bd5";
  if (mode == "stream") return "#8e44ad";
  return "#e08a1e";  // loaded
}

}  // namespace html

std::string probe_html(const ProbeReport& r) {
  using namespace html;
  const auto& o = r.options;
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>tzero probe</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;vertical-align:top}"
       ".ok{color:#1a7f37}.bad{color:#c62828;font-weight:bold}code{font-size:12px}"
       "ul.diffs{margin:4px 0;padding-left:18px}"
    << kReportCss << "</style></head><body>";
  if (!r.comparable)
    h << verdict_banner(false, "Nothing could be compared",
                        "No prompt and sampling had two runs that answered.");
  else if (r.identical)
    h << verdict_banner(
        true, "Reproducible: every run matched bit for bit",
        std::string(r.failed_requests
                        ? "Every run that answered; " + std::to_string(r.failed_requests) +
                              " request(s) failed (below). "
                        : "") +
            "Compared: " + (r.logprobs ? "token texts and logprobs." : "texts only."));
  else
    h << verdict_banner(false, "Diverged: the server's output is not reproducible",
                        "The runs that differ are below, with where their bits differ marked.");
  h << "<h1>tzero probe</h1><p>Server: <code>" << html_escape(r.endpoint) << "</code>, model <code>"
    << html_escape(o.model) << "</code>. " << r.prompts.size()
    << " prompt(s); per prompt and sampling, " << o.runs << " solo, " << o.runs << " streamed"
    << (o.concurrency > 0 ? " and " + std::to_string(o.runs) + " loaded (" +
                                std::to_string(o.concurrency) + " concurrent fillers)"
                          : std::string())
    << " run(s) of " << o.max_tokens << " tokens, each compared with the first solo run: "
    << (r.logprobs ? "token texts and logprobs, bit for bit."
                   : "texts only (the server "
                     "reported no logprobs).")
    << "</p>";
  if (r.failed_requests > 0)
    h << "<p class='bad'>" << r.failed_requests << " of " << r.requests
      << " probed request(s) failed: recorded under Failed requests, not compared.</p>";
  h << "<p>system_fingerprint: ";
  if (r.fingerprints.empty()) h << "none reported";
  for (const auto& [v, n] : r.fingerprints)
    h << "<code>" << visible(v) << "</code> (" << n << " runs) ";
  if (r.fingerprints.size() > 1) h << "<span class='bad'>several fingerprints</span>";
  h << "</p>";
  h << "<h2>Prompts</h2><table><tr><th>#</th><th>prompt</th><th>sampling</th><th>unique "
       "outputs</th><th>first divergence</th><th>max |&Delta; logprob|</th><th>runs</th>";
  for (const auto& [name, m] : r.modes) h << "<th>" << html_escape(name) << " p50/p99 ms</th>";
  h << "</tr>";
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(short_text(r.prompts[i].prompt, 60))
        << "</td><td>" << html_escape(sampling_label(s)) << "</td>";
      if (s.compared())
        h << "<td class='" << (s.summary.unique_outputs <= 1 ? "ok" : "bad") << "'>"
          << s.summary.unique_outputs << "</td>";
      else
        h << "<td class='bad'>not compared</td>";
      h << "<td>"
        << (s.summary.first_divergence ? std::to_string(*s.summary.first_divergence) : "-")
        << "</td><td>" << (r.logprobs ? sci(s.summary.max_logprob_diff) : "n/a") << "</td><td>"
        << s.runs.size() << " (" << s.summary.diverged_runs << " differ"
        << (s.failed_runs ? ", " + std::to_string(s.failed_runs) + " failed" : std::string())
        << ")</td>";
      for (const auto& [name, m] : r.modes) {
        auto it = s.modes.find(name);
        h << "<td>"
          << (it == s.modes.end()
                  ? "-"
                  : fixed(it->second.p50_ms, 1) + " / " + fixed(it->second.p99_ms, 1))
          << "</td>";
      }
      h << "</tr>";
    }
  h << "</table>";
  h << reference_answers(r);
  h << "<h2>Unique outputs per prompt</h2>" << unique_bars(r)
    << "<h2>First divergence positions</h2>";
  const std::string chart = divergence_chart(r);
  h << (chart.empty() ? "<p class='ok'>No run diverged: nothing to place.</p>" : chart);
  h << "<h2>Latency per mode</h2>" << latency_bars(r);
  h << diverging_runs(r) << failed_requests(r);
  h << "<p>Made by <code>tzero probe</code> " << TZ_VERSION << " in " << fixed(r.wall_s, 1)
    << " s: " << r.requests << " requests and " << r.filler_requests
    << " filler requests.</p></body></html>\n";
  return h.str();
}

}  // namespace tzero::probe
