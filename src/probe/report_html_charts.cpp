// The probe page's inline SVG charts: unique outputs per prompt and sampling, the first
// divergence of every diverging run (coloured by mode, with its legend), latency per mode.
#include <algorithm>
#include <sstream>

#include "base/html.h"
#include "probe/report_html_parts.h"

namespace tzero::probe::html {

std::string unique_bars(const ProbeReport& r) {
  int rows = 0, peak = 1;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) {
      ++rows;
      peak = std::max(peak, s.summary.unique_outputs);
    }
  const int bh = 18, left = 300, width = 360;
  std::ostringstream o;
  o << "<svg width='" << left + width + 110 << "' height='" << rows * bh + 10
    << "' role='img' aria-label='unique outputs per prompt'>";
  int row = 0;
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      const int y = 5 + row++ * bh;
      const int u = s.summary.unique_outputs;
      o << "<text x='0' y='" << y + 12 << "' font-size='11'>"
        << html_escape(series_label(r.prompts[i], s, i)) << "</text>";
      if (!s.compared()) {
        o << "<text x='" << left << "' y='" << y + 12 << "' font-size='11' fill='#c62828'>"
          << "not compared (" << s.failed_runs << " of " << s.runs.size() << " runs failed)</text>";
        continue;
      }
      const int w = std::max(2, width * u / peak);
      o << "<rect x='" << left << "' y='" << y << "' width='" << w << "' height='" << bh - 4
        << "' fill='" << (u <= 1 ? "#1a7f37" : "#c62828") << "'><title>" << u
        << " distinct output(s)</title></rect><text x='" << left + w + 4 << "' y='" << y + 12
        << "' font-size='11'>" << u << "</text>";
    }
  o << "</svg>";
  return o.str();
}

std::string divergence_chart(const ProbeReport& r) {
  size_t max_pos = size_t(std::max(r.options.max_tokens, 1));
  bool any = false;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series)
      for (const auto& run : s.runs)
        if (!run.failed() && run.vs_reference.first_divergence) {
          any = true;
          max_pos = std::max(max_pos, *run.vs_reference.first_divergence + 1);
        }
  if (!any) return "";
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
        if (run.failed() || !run.vs_reference.first_divergence) continue;
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
    << " (each mark: one run's first divergence from the reference)</text></svg>";
  o << "<p>";
  for (const char* m : {"solo", "stream", "loaded"})
    o << "<span style='display:inline-block;width:10px;height:10px;background:" << mode_color(m)
      << "'></span> " << m << " &nbsp; ";
  o << "(loaded: under concurrent load)</p>";
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

}  // namespace tzero::probe::html
