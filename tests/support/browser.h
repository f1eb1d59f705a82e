// Headless Chromium (Debian's `chromium`, installed by `make test`) for the report pages' tests:
// a page is opened at a fixed window size and measured from inside: where its verdict banner
// is, whether anything makes it scroll sideways, whether each inline SVG chart draws a shape;
// and a screenshot is taken. Tests skip with a message when Chromium is absent.
#pragma once

#include <string>

namespace tzero::test {

std::string chromium_path();  // "" when absent

struct PageCheck {
  std::string error;          // why the page could not be measured ("" when it was)
  double verdict_top = -1;    // px from the page's top to #verdict; -1: the page has none
  std::string verdict_class;  // "verdict pass" or "verdict fail"
  std::string verdict_text;
  int overflow_x = 0;            // px the page is wider than the window (> 0: it scrolls sideways)
  int svgs = 0, empty_svgs = 0;  // inline SVG charts, and those that draw no visible shape
  size_t screenshot_bytes = 0;   // the PNG's size (a blank page compresses to a few kB)
  std::string dom;               // the page's DOM after its scripts ran
};

// Opens the HTML file (or an http:// URL) at width x height.
PageCheck check_page(const std::string& file_or_url, int width = 1200, int height = 1600);

}  // namespace tzero::test
