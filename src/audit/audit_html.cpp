// The audit's HTML report: a table of every configuration, a heatmap of first divergences by
// layer and position, and bars of generation throughput per configuration, all inline SVG.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "audit/audit.h"
#include "base/html.h"

namespace tzero {

namespace {

std::string heatmap(const AuditReport& r) {
  std::map<std::pair<int, uint32_t>, int> cells;  // (layer, pos) -> count
  int max_layer = 0;
  uint32_t max_pos = 0;
  for (const auto& o : r.outcomes)
    if (!o.identical && o.has_first) {
      ++cells[{o.first_layer, o.first_pos}];
      max_layer = std::max(max_layer, o.first_layer);
      max_pos = std::max(max_pos, o.first_pos);
    }
  if (cells.empty()) return "<p>No configuration diverged: nothing to map.</p>";
  const int cw = 14, ch = 14, left = 70, top = 10;
  const int rows = max_layer + 2, cols = int(max_pos) + 1;  // row 0: outside layers
  const int w = std::max(left + cols * cw + 10, 640), h = top + rows * ch + 30;
  int peak = 0;
  for (auto& [k, v] : cells) peak = std::max(peak, v);
  std::ostringstream s;
  s << "<svg width='" << w << "' height='" << h << "' role='img' aria-label='first divergences'>";
  for (int row = 0; row < rows; ++row)
    s << "<text x='2' y='" << top + row * ch + 11 << "' font-size='10'>"
      << (row == 0 ? "outside" : "blk." + std::to_string(row - 1)) << "</text>";
  for (auto& [k, v] : cells) {
    const int row = k.first + 1;
    const double a = 0.25 + 0.75 * v / peak;
    s << "<rect x='" << left + int(k.second) * cw << "' y='" << top + row * ch << "' width='"
      << cw - 1 << "' height='" << ch - 1 << "' fill='rgba(200,40,40," << fixed(a) << ")'><title>"
      << v << " run(s) first diverged at position " << k.second << "</title></rect>";
  }
  s << "<text x='" << left << "' y='" << h - 8 << "' font-size='10'>position 0 .. " << max_pos
    << " (the first divergence of each diverging run)</text></svg>";
  return s.str();
}

std::string bars(const AuditReport& r) {
  std::map<std::string, std::pair<double, int>> tps;  // config -> (sum, count)
  for (const auto& o : r.outcomes) {
    tps[o.config].first += o.tg_tokens_per_s;
    tps[o.config].second += 1;
  }
  double peak = 1e-9;
  for (auto& [k, v] : tps) peak = std::max(peak, v.first / v.second);
  const int bh = 16, left = 260, width = 420;
  std::ostringstream s;
  s << "<svg width='" << left + width + 80 << "' height='" << r.configs.size() * bh + 10
    << "' role='img' aria-label='throughput'>";
  int i = 0;
  for (const auto& c : r.configs) {
    const auto& v = tps[c.name];
    const double t = v.second ? v.first / v.second : 0;
    const int y = 5 + i++ * bh;
    s << "<text x='0' y='" << y + 11 << "' font-size='11'>" << html_escape(c.name)
      << "</text><rect x='" << left << "' y='" << y << "' width='" << int(width * t / peak)
      << "' height='" << bh - 3 << "' fill='" << (c.deterministic ? "#3a7bd5" : "#e08a1e")
      << "'/><text x='" << left + int(width * t / peak) + 4 << "' y='" << y + 11
      << "' font-size='11'>" << fixed(t, 1) << "</text>";
  }
  s << "</svg>";
  return s.str();
}
}  // namespace

std::string audit_html(const AuditReport& r) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>tzero audit</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}.ok{color:#1a7f37}"
       ".bad{color:#c62828;font-weight:bold}.fast{color:#b26a00}</style></head><body>";
  h << "<h1>tzero audit</h1><p>Model: <code>" << html_escape(r.model) << "</code>. "
    << r.prompts.size() << " prompt(s), " << r.configs.size()
    << " configurations, each compared with the baseline "
    << "by tracing every named intermediate of every position.</p>";
  h << "<p class='" << (r.deterministic_failures ? "bad" : "ok") << "'>"
    << (r.deterministic_failures
            ? std::to_string(r.deterministic_failures) + " deterministic run(s) diverged."
            : "Every deterministic configuration is bit-identical to the baseline.")
    << "</p><p class='fast'>Fast mode: " << r.fast_runs_diverged << " of " << r.fast_runs
    << " runs differ from the deterministic baseline (largest logit deviation "
    << fixed(r.fast_max_logit_deviation, 6) << "); its repeated runs gave up to "
    << r.fast_distinct_results << " distinct results"
    << (r.fast_distinct_results <= 1 ? " (no run-to-run nondeterminism seen this time: with one "
                                       "core, or with luck, the arrival order did not change)"
                                     : "")
    << ".</p>";
  h << "<h2>Flip risk</h2><table><tr><th>prompt</th><th>smallest top-2 logit gap</th><th>at "
       "step</th></tr>";
  for (size_t p = 0; p < r.prompts.size(); ++p)
    h << "<tr><td>" << html_escape(r.prompts[p].substr(0, 60)) << "</td><td>"
      << fixed(r.min_gap[p], 6) << "</td><td>" << r.min_gap_step[p] << "</td></tr>";
  h << "</table><p>A rounding deviation larger than the smallest gap could change the text; "
       "compare with the fast mode deviation above.</p>";
  h << "<h2>Configurations</h2><table><tr><th>configuration</th><th>prompt</th><th>result</th>"
       "<th>tokens</th><th>max logit deviation</th><th>prefill tok/s</th><th>decode "
       "tok/s</th></tr>";
  for (const auto& o : r.outcomes) {
    const bool base = o.config == r.configs[0].name;
    std::string res = base ? "baseline" : o.identical ? "identical" : "diverged";
    if (!o.identical && o.has_first)
      res += " at pos " + std::to_string(o.first_pos) + ", " +
             (o.first_layer < 0 ? "" : "blk." + std::to_string(o.first_layer) + ".") + o.first_op;
    h << "<tr><td>" << html_escape(o.config) << "</td><td>" << o.prompt + 1 << "</td><td class='"
      << (o.identical ? "ok" : "bad") << "'>" << html_escape(res) << "</td><td>"
      << (o.tokens_equal ? "same" : "changed") << "</td><td>" << fixed(o.max_logit_deviation, 6)
      << "</td><td>" << fixed(o.pp_tokens_per_s, 1) << "</td><td>" << fixed(o.tg_tokens_per_s, 1)
      << "</td></tr>";
  }
  h << "</table><h2>First divergences by layer and position</h2>" << heatmap(r)
    << "<h2>Decode throughput per configuration (tokens/s)</h2>" << bars(r)
    << "<p>Blue: deterministic. Orange: fast mode.</p></body></html>\n";
  return h.str();
}

}  // namespace tzero
