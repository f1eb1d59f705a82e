// The probe's HTML report, in the style of the audit's (src/audit/audit_html.cpp): a summary, a
// table per prompt and sampling, and three inline SVG charts (unique outputs, first divergence
// positions by mode, latency per mode).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "base/html.h"
#include "probe/report.h"

namespace tzero::probe {

namespace {

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

std::string series_label(const PromptResult& p, const SeriesResult& s, size_t index) {
  return "#" + std::to_string(index + 1) + " " + short_text(p.prompt, 24) + " (" +
         (s.name == "greedy" ? std::string("t=0") : "t=" + fixed(s.temperature, 2)) + ")";
}

const char* mode_color(const std::string& mode) {
  if (mode == "solo") return "#3a7bd5";
  if (mode == "stream") return "#8e44ad";
  return "#e08a1e";  // loaded
}

std::string unique_bars(const ProbeReport& r) {
  int rows = 0, peak = 1;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) {
      ++rows;
      peak = std::max(peak, s.summary.unique_outputs);
    }
  const int bh = 18, left = 300, width = 360;
  std::ostringstream o;
  o << "<svg width='" << left + width + 60 << "' height='" << rows * bh + 10
    << "' role='img' aria-label='unique outputs per prompt'>";
  int row = 0;
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      const int y = 5 + row++ * bh;
      const int u = s.summary.unique_outputs;
      const int w = std::max(2, width * u / peak);
      o << "<text x='0' y='" << y + 12 << "' font-size='11'>"
        << html_escape(series_label(r.prompts[i], s, i)) << "</text><rect x='" << left << "' y='"
        << y << "' width='" << w << "' height='" << bh - 4 << "' fill='"
        << (u <= 1 ? "#1a7f37" : "#c62828") << "'><title>" << u
        << " distinct output(s)</title></rect><text x='" << left + w + 4 << "' y='" << y + 12
        << "' font-size='11'>" << u << "</text>";
    }
  o << "</svg>";
  return o.str();
}

std::string divergence_strip(const ProbeReport& r) {
  size_t max_pos = size_t(std::max(r.options.max_tokens, 1));
  bool any = false;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series)
      for (const auto& run : s.runs)
        if (run.vs_reference.first_divergence) {
          any = true;
          max_pos = std::max(max_pos, *run.vs_reference.first_divergence + 1);
        }
  if (!any) return "<p class='ok'>No run diverged: nothing to place.</p>";
  int rows = 0;
  for (const auto& p : r.prompts) rows += int(p.series.size());
  const int rh = 20, left = 300, width = 480, top = 5;
  const int h = top + rows * rh + 30;
  std::ostringstream o;
  o << "<svg width='" << left + width + 20 << "' height='" << h
    << "' role='img' aria-label='first divergence positions'>";
  int row = 0;
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      const int y = top + row++ * rh;
      o << "<text x='0' y='" << y + 13 << "' font-size='11'>"
        << html_escape(series_label(r.prompts[i], s, i)) << "</text><line x1='" << left << "' y1='"
        << y + 9 << "' x2='" << left + width << "' y2='" << y + 9 << "' stroke='#ddd'/>";
      int stack = 0;
      for (const auto& run : s.runs) {
        if (!run.vs_reference.first_divergence) continue;
        const size_t pos = *run.vs_reference.first_divergence;
        const int x = left + int(double(width) * double(pos) / double(max_pos));
        o << "<rect x='" << x + (stack++ % 4) * 3 << "' y='" << y + 2 << "' width='6' height='"
          << rh - 6 << "' fill='" << mode_color(run.mode) << "'><title>" << run.mode << " run "
          << run.index + 1 << ": first divergence at " << (r.logprobs ? "token " : "byte ") << pos
          << "</title></rect>";
      }
    }
  o << "<text x='" << left << "' y='" << h - 8 << "' font-size='10'>"
    << (r.logprobs ? "token" : "byte") << " position 0 .. " << max_pos
    << " (each mark: one run's first divergence from the "
    << "first solo run)</text></svg>";
  return o.str();
}

std::string latency_bars(const ProbeReport& r) {
  double peak = 1e-9;
  for (const auto& [name, m] : r.modes) peak = std::max(peak, m.p99_ms);
  const int bh = 14, left = 120, width = 420;
  std::ostringstream o;
  o << "<svg width='" << left + width + 120 << "' height='" << r.modes.size() * (2 * bh + 8) + 10
    << "' role='img' aria-label='latency per mode'>";
  int i = 0;
  for (const auto& [name, m] : r.modes) {
    const int y = 5 + i++ * (2 * bh + 8);
    const int w50 = std::max(1, int(width * m.p50_ms / peak));
    const int w99 = std::max(1, int(width * m.p99_ms / peak));
    o << "<text x='0' y='" << y + 18 << "' font-size='12'>" << html_escape(name) << "</text>"
      << "<rect x='" << left << "' y='" << y << "' width='" << w50 << "' height='" << bh - 2
      << "' fill='" << mode_color(name) << "'/><text x='" << left + w50 + 4 << "' y='" << y + 10
      << "' font-size='10'>p50 " << fixed(m.p50_ms, 1) << " ms</text><rect x='" << left << "' y='"
      << y + bh << "' width='" << w99 << "' height='" << bh - 2 << "' fill='" << mode_color(name)
      << "' fill-opacity='0.5'/><text x='" << left + w99 + 4 << "' y='" << y + bh + 10
      << "' font-size='10'>p99 " << fixed(m.p99_ms, 1) << " ms</text>";
  }
  o << "</svg>";
  return o.str();
}
}  // namespace

std::string probe_html(const ProbeReport& r) {
  const auto& o = r.options;
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>tzero probe</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}.ok{color:#1a7f37}"
       ".bad{color:#c62828;font-weight:bold}code{font-size:12px}</style></head><body>";
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
  h << "<p class='"
    << (r.identical ? "ok'>Identical: every run matched bit for bit."
                    : "bad'>Diverged: the server's output is not reproducible.")
    << "</p><p>system_fingerprint: ";
  if (r.fingerprints.empty()) h << "none reported";
  for (const auto& [v, n] : r.fingerprints)
    h << "<code>" << html_escape(v) << "</code> (" << n << " runs) ";
  if (r.fingerprints.size() > 1) h << "<span class='bad'>several fingerprints</span>";
  h << "</p>";
  h << "<h2>Prompts</h2><table><tr><th>#</th><th>prompt</th><th>sampling</th><th>unique "
       "outputs</th><th>first divergence</th><th>max |&Delta; logprob|</th><th>runs</th>";
  for (const auto& [name, m] : r.modes) h << "<th>" << html_escape(name) << " p50/p99 ms</th>";
  h << "</tr>";
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(short_text(r.prompts[i].prompt, 60))
        << "</td><td>"
        << (s.name == "greedy"
                ? std::string("t=0")
                : "t=" + fixed(s.temperature, 2) + " seed=" + std::to_string(*s.seed))
        << "</td><td class='" << (s.summary.unique_outputs <= 1 ? "ok" : "bad") << "'>"
        << s.summary.unique_outputs << "</td><td>"
        << (s.summary.first_divergence ? std::to_string(*s.summary.first_divergence) : "-")
        << "</td><td>" << (r.logprobs ? sci(s.summary.max_logprob_diff) : "n/a") << "</td><td>"
        << s.runs.size() << " (" << s.summary.diverged_runs << " differ)</td>";
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
  h << "<h2>Unique outputs per prompt</h2>" << unique_bars(r)
    << "<h2>First divergence positions</h2>" << divergence_strip(r)
    << "<p>Blue: solo. Purple: streamed. Orange: under concurrent load.</p>"
    << "<h2>Latency per mode</h2>" << latency_bars(r);
  bool any = false;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) any = any || !s.summary.identical;
  if (any) {
    h << "<h2>Diverging runs</h2><table><tr><th>#</th><th>sampling</th><th>mode</th><th>run</th>"
         "<th>first divergence</th><th>text (reference above)</th></tr>";
    for (size_t i = 0; i < r.prompts.size(); ++i)
      for (const auto& s : r.prompts[i].series) {
        if (s.summary.identical) continue;
        h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(s.name)
          << "</td><td>reference</td><td>solo "
          << "1</td><td>-</td><td><code>" << html_escape(short_text(s.runs[0].out.text, 200))
          << "</code></td></tr>";
        for (const auto& run : s.runs)
          if (!run.vs_reference.identical)
            h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(s.name) << "</td><td>"
              << run.mode << "</td><td>" << run.index + 1 << "</td><td>"
              << (run.vs_reference.first_divergence
                      ? std::to_string(*run.vs_reference.first_divergence)
                      : "-")
              << "</td><td><code>" << html_escape(short_text(run.out.text, 200))
              << "</code></td></tr>";
      }
    h << "</table>";
  }
  h << "<p>Made by <code>tzero probe</code> " << TZ_VERSION << " in " << fixed(r.wall_s, 1)
    << " s: " << r.requests << " requests and " << r.filler_requests
    << " filler requests.</p></body></html>\n";
  return h.str();
}

}  // namespace tzero::probe
