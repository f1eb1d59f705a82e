// The audit's HTML report opens in headless Chromium: the DOM it renders has the tables and the
// SVG charts, and a screenshot is not blank. Skipped with a message where Chromium is absent
// (Debian package `chromium`).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "support/test_support.h"

namespace {
std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
}  // namespace

TEST(AuditReport, RendersInHeadlessChromium) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium absent: apt-get install chromium to run this test";
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string dir = tzero::test::scratch_dir() + "/render";
  // A perturbed run, so the heatmap has cells to draw.
  const auto r = tzero::test::run_tzero(
      {"audit", "-m", model, "-n", "4", "--perturb", "1:ffn_up:3", "--report", dir});
  ASSERT_EQ(r.exit_code, 1) << r.out;
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--user-data-dir=" +
      dir + "/profile ";
  const std::string url = "file://" + dir + "/index.html";
  ASSERT_EQ(shell(browser + flags + "--dump-dom " + url + " > " + dir + "/dom.html 2>/dev/null"),
            0);
  const std::string dom = tzero::test::read_file(dir + "/dom.html");
  EXPECT_NE(dom.find("<table>"), std::string::npos);
  EXPECT_NE(dom.find("first divergences"), std::string::npos);
  EXPECT_NE(dom.find("<rect"), std::string::npos) << "the charts have shapes";
  ASSERT_EQ(shell(browser + flags + "--window-size=1200,1600 --screenshot=" + dir + "/shot.png " +
                  url + " >/dev/null 2>&1"),
            0);
  // A blank page compresses to a few kB; tables, text and charts do not.
  EXPECT_GT(std::filesystem::file_size(dir + "/shot.png"), 20000u);
}
