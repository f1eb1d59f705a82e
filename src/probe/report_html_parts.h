// The pieces of the probe's HTML page (report_html.cpp puts them together): the inline SVG
// charts (report_html_charts.cpp) and the sections about runs' texts (report_html_runs.cpp):
// reference answers, diverging runs with the places where their bits differ marked, failed
// requests. Every piece is self-contained HTML (no scripts, no external assets).
#pragma once

#include <string>

#include "base/html_text.h"
#include "probe/probe.h"

namespace tzero::probe::html {

std::string sci(double v);                               // "%.3g"
std::string short_text(const std::string& s, size_t n);  // cut at n bytes (not mid-UTF-8), "..."
std::string sampling_label(const SeriesResult& s);       // "t=0", "t=0.80 seed=1234"
// "#2 The capital of France... (t=0)"
std::string series_label(const PromptResult& p, const SeriesResult& s, size_t index);
const char* mode_color(const std::string& mode);
// Text from a server or a model for the page: HTML-escaped, and a byte that is not part of
// valid UTF-8 or a control character other than newline and tab shown as a highlighted \xNN
// (the page never holds a raw escape sequence, and two different texts never look the same).
inline std::string visible(const std::string& s) {
  return html_visible(s);
}

// Charts. divergence_chart returns "" when no run diverged (nothing to place, no legend).
std::string unique_bars(const ProbeReport& r);
std::string divergence_chart(const ProbeReport& r);
std::string latency_bars(const ProbeReport& r);

// Sections, each with its <h2>; "" when there is nothing to show.
std::string reference_answers(const ProbeReport& r);
std::string diverging_runs(const ProbeReport& r);
std::string failed_requests(const ProbeReport& r);

}  // namespace tzero::probe::html
