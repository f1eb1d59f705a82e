#include "audit/audit_charts.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "base/html.h"

namespace tzero::audit_charts {

namespace {

// The heatmap's colour for a count out of peak: light to dark red.
std::string heat(int count, int peak) {
  const double a = peak <= 1 ? 1.0 : 0.25 + 0.75 * double(count - 1) / double(peak - 1);
  return "rgba(200,40,40," + fixed(a) + ")";
}

// The tick step of an axis: the smallest of 1, 2, 5, 10, 20, 50, ... that keeps labels `min_px`
// apart at `px` per unit.
int tick_step(int px, int min_px) {
  for (int base = 1;; base *= 10)
    for (int m : {1, 2, 5})
      if (base * m * px >= min_px) return base * m;
}

std::string range_text(const RateStats& s) {
  return fixed(s.median, 1) + " (" + fixed(s.min, 1) + "&ndash;" + fixed(s.max, 1) + ")";
}

}  // namespace

std::string short_number(double v) {
  if (v == 0) return "0";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string divergence_heatmap(const AuditReport& r) {
  struct Cell {
    int runs = 0;
    std::vector<std::string> who;  // "config, prompt N"
  };
  std::map<std::pair<int, uint32_t>, Cell> cells;  // (layer, pos)
  int max_layer = -1;
  uint32_t max_pos = 0;
  for (const auto& o : r.outcomes)
    if (!o.identical && o.has_first) {
      Cell& c = cells[{o.first_layer, o.first_pos}];
      ++c.runs;
      c.who.push_back(o.config + ", prompt " + std::to_string(o.prompt + 1));
      max_layer = std::max(max_layer, o.first_layer);
      max_pos = std::max(max_pos, o.first_pos);
    }
  if (cells.empty()) return "";
  int peak = 0;
  for (const auto& [k, v] : cells) peak = std::max(peak, v.runs);
  const int rows = max_layer + 2, cols = int(max_pos) + 1;  // row 0: ops outside the layers
  const int cw = std::clamp(900 / cols, 4, 22), ch = std::clamp(600 / rows, 10, 20);
  const int left = 86, top = 10, grid_w = cols * cw, grid_h = rows * ch;
  const int legend_y = top + grid_h + 44;
  const int w = std::max(left + grid_w + 20, 560), h = legend_y + 40;
  std::ostringstream s;
  s << "<svg width='" << w << "' height='" << h << "' role='img' aria-label='first divergences'>";
  for (int row = 0; row < rows; ++row) {
    const int y = top + row * ch;
    s << "<rect x='" << left << "' y='" << y << "' width='" << grid_w << "' height='" << ch - 1
      << "' fill='#f4f4f4'/><text x='2' y='" << y + ch / 2 + 4 << "' font-size='11'>"
      << (row == 0 ? "outside layers" : "blk." + std::to_string(row - 1)) << "</text>";
  }
  for (const auto& [k, v] : cells) {
    std::string who;
    for (size_t i = 0; i < v.who.size() && i < 6; ++i) who += "\n" + v.who[i];
    if (v.who.size() > 6) who += "\n... " + std::to_string(v.who.size() - 6) + " more";
    s << "<rect x='" << left + int(k.second) * cw << "' y='" << top + (k.first + 1) * ch
      << "' width='" << std::max(cw - 1, 1) << "' height='" << ch - 1 << "' fill='"
      << heat(v.runs, peak) << "'><title>" << v.runs << " run(s) first diverged at position "
      << k.second << (k.first < 0 ? ", outside the layers" : ", blk." + std::to_string(k.first))
      << ":" << html_escape(who) << "</title></rect>";
  }
  const int step = tick_step(cw, 20);
  for (int p = 0; p < cols; p += step)
    s << "<line x1='" << left + p * cw + cw / 2 << "' y1='" << top + grid_h << "' x2='"
      << left + p * cw + cw / 2 << "' y2='" << top + grid_h + 4 << "' stroke='#555'/><text x='"
      << left + p * cw + cw / 2 << "' y='" << top + grid_h + 16
      << "' font-size='10' text-anchor='middle'>" << p << "</text>";
  s << "<text x='" << left << "' y='" << top + grid_h + 32
    << "' font-size='11'>position (token index in prompt + generated text)</text>";
  // The colour scale: one swatch per count (five spread over 1..peak when there are more).
  std::vector<int> values;
  if (peak <= 6)
    for (int v = 1; v <= peak; ++v) values.push_back(v);
  else
    for (int i = 0; i < 5; ++i) values.push_back(1 + (peak - 1) * i / 4);
  s << "<text x='2' y='" << legend_y + 13 << "' font-size='11'>runs per cell:</text>";
  int x = left;
  for (int v : values) {
    s << "<rect x='" << x << "' y='" << legend_y << "' width='18' height='18' fill='"
      << heat(v, peak) << "' stroke='#999'/><text x='" << x + 22 << "' y='" << legend_y + 13
      << "' font-size='11'>" << v << "</text>";
    x += 22 + 8 * int(std::to_string(v).size()) + 10;
  }
  s << "</svg>";
  return s.str();
}

std::string throughput(const AuditReport& r) {
  std::ostringstream s;
  if (r.timing.empty()) return "<p>Not measured (<code>--timing-runs 0</code>).</p>";
  // One decision for the whole chart: bars for some configurations and not others would
  // compare a measurement with noise. The scale fits the medians (a whisker past the edge is
  // cut there, its label says where it ends), so one wild run does not flatten every bar.
  double peak = 0;
  int under = 0;
  bool unstable = false;
  for (const auto& t : r.timing) {
    under += t.below_noise_floor || t.decode.max <= 0;
    peak = std::max(peak, 1.25 * t.decode.median);
    unstable = unstable || t.decode.max > 2 * t.decode.min;
  }
  s << "<p>Each configuration run untraced on prompt 1, at least " << r.timing_runs
    << " time(s) and until " << fixed(kTimingBudgetS, 1) << " s of wall time (at most "
    << kTimingMaxRuns << " runs): the median and, in brackets, the range over the runs. A "
    << "batched row's decode rate is the audited request's own while it shares every step with "
    << "its mates; its prefill shares forward passes with theirs and is not timed.</p>";
  if (under > 0) {
    s << "<p><b>No bars drawn:</b> " << under << " of " << r.timing.size()
      << " configurations decoded their tokens in under " << fixed(kTimingNoiseFloorS * 1000, 0)
      << " ms per run (median), where one scheduler delay changes the rate several times over: "
      << "on this model (or with this few tokens) the rates are timer noise, not throughput. "
      << "The table lists them; a larger model or a larger <code>-n</code> gives bars.</p>";
  } else {
    const int bh = 18, left = 270, width = 400;
    s << "<svg width='" << left + width + 150 << "' height='" << r.timing.size() * bh + 28
      << "' role='img' aria-label='throughput'>";
    int i = 0;
    for (size_t c = 0; c < r.timing.size(); ++c) {
      const AuditTiming& t = r.timing[c];
      const bool det = c < r.configs.size() ? r.configs[c].deterministic : true;
      const int y = 5 + i++ * bh;
      auto px = [&](double v) { return left + int(width * std::min(v / peak, 1.0)); };
      s << "<text x='0' y='" << y + 12 << "' font-size='11'>" << html_escape(t.config)
        << "</text><rect x='" << left << "' y='" << y << "' width='" << px(t.decode.median) - left
        << "' height='" << bh - 5 << "' fill='" << (det ? "#3a7bd5" : "#e08a1e")
        << "'><title>median " << fixed(t.decode.median, 1) << " tokens/s over " << t.runs
        << " runs</title></rect><line x1='" << px(t.decode.min) << "' y1='" << y + (bh - 5) / 2
        << "' x2='" << px(t.decode.max) << "' y2='" << y + (bh - 5) / 2
        << "' stroke='#222'/><line x1='" << px(t.decode.min) << "' y1='" << y + 2 << "' x2='"
        << px(t.decode.min) << "' y2='" << y + bh - 7 << "' stroke='#222'/><line x1='"
        << px(t.decode.max) << "' y1='" << y + 2 << "' x2='" << px(t.decode.max) << "' y2='"
        << y + bh - 7 << "' stroke='#222'/><text x='" << px(t.decode.max) + 5 << "' y='" << y + 12
        << "' font-size='11'>" << range_text(t.decode) << "</text>";
    }
    s << "<text x='" << left << "' y='" << r.timing.size() * bh + 22
      << "' font-size='10'>decode tokens/s: bar at the median, whisker from the slowest to the "
         "fastest run</text></svg><p>Blue: deterministic. Orange: fast mode.</p>";
  }
  if (unstable)
    s << "<p>Some configurations' fastest run is more than twice their slowest: the machine was "
         "busy, or the runs are short; compare medians, not single runs.</p>";
  s << "<table><tr><th>configuration</th><th>timed runs</th><th>decode tok/s median "
       "(min&ndash;max)</th><th>prefill tok/s median (min&ndash;max)</th><th>decode time per run "
       "(median)</th></tr>";
  for (const auto& t : r.timing) {
    s << "<tr><td>" << html_escape(t.config) << "</td><td>" << t.runs << "</td><td>"
      << (t.decode.max > 0 ? range_text(t.decode) : "n/a") << "</td><td>";
    if (t.prefill_na.empty())
      s << range_text(t.prefill);
    else
      s << "<span title='" << html_escape(t.prefill_na) << "'>n/a&dagger;</span>";
    s << "</td><td" << (t.below_noise_floor ? " class='fast'" : "") << ">"
      << fixed(t.decode_seconds * 1000, 2) << " ms"
      << (t.below_noise_floor ? " (under the noise floor)" : "") << "</td></tr>";
  }
  s << "</table><p>&dagger; Batched rows: the request's prompt is prefilled in the same forward "
       "passes as its mates' work, so it has no prefill time of its own.</p>";
  return s.str();
}

}  // namespace tzero::audit_charts
