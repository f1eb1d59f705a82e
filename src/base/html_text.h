// Texts in the self-contained HTML reports (audit, probe, verify, the server's console): any
// bytes shown safely, two texts' differing stretch marked, and the verdict banner every report
// opens with (its pass or fail first, before any detail).
#pragma once

#include <string>

namespace tzero {

// The text escaped for HTML, each byte that is not valid UTF-8 or is a control character (other
// than newline and tab) shown as a marked \xHH.
std::string html_visible(const std::string& s);

// The differing stretch of two texts: [prefix, a.size() - suffix) of a, and of b likewise, on
// UTF-8 character boundaries.
struct TextStretch {
  size_t prefix = 0, suffix = 0;
};
TextStretch text_stretch(const std::string& a, const std::string& b);

// t (html_visible) in <code class='text'> with [from, to) in a <mark> (a thin marked gap where
// the stretch is empty: the other text has more there).
std::string html_marked(const std::string& t, size_t from, size_t to);

// The CSS of the classes above and of the banner.
extern const char* const kReportCss;

// <div id='verdict' class='verdict pass|fail' role='status'><b>PASS|FAIL</b> headline
// <div>detail</div></div>: the first thing a report shows. headline and detail are HTML.
std::string verdict_banner(bool pass, const std::string& headline, const std::string& detail);

}  // namespace tzero
