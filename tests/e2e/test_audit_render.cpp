// The report pages in headless Chromium (support/browser.h; Debian's `chromium`, which `make
// test` installs): each renders, opens with its verdict banner at the top (pass or fail, as the
// report says), never scrolls sideways at 1200 px, every chart draws shapes, and a screenshot
// is not blank. Here the audit's (a passing run, with fast mode's differences shown as
// expected, and a perturbed failing one) and verify's (a drifted lock, its texts' difference
// marked); the probe's is in test_probe.cpp, the server console's in test_serve_console.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/browser.h"
#include "support/test_support.h"

namespace {

void expect_page_layout(const tzero::test::PageCheck& c, bool pass, const std::string& what) {
  ASSERT_EQ(c.error, "") << what;
  EXPECT_GE(c.verdict_top, 0) << what << ": no #verdict banner";
  EXPECT_LT(c.verdict_top, 120) << what << ": the verdict is not at the top";
  EXPECT_EQ(c.verdict_class, pass ? "verdict pass" : "verdict fail") << what << c.verdict_text;
  EXPECT_LE(c.overflow_x, 0) << what << ": the page scrolls sideways";
  EXPECT_EQ(c.empty_svgs, 0) << what << ": a chart draws nothing";
  EXPECT_GT(c.screenshot_bytes, 20000u) << what << ": the screenshot looks blank";
}

}  // namespace

TEST(AuditReport, RendersInHeadlessChromium) {
  if (tzero::test::chromium_path().empty())
    GTEST_SKIP() << "chromium absent: make test installs it (apt-get install chromium)";
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string dir = tzero::test::scratch_dir() + "/render";
  // A perturbed run, so the heatmap has cells to draw and the verdict is a failure.
  auto r = tzero::test::run_tzero(
      {"audit", "-m", model, "-n", "4", "--perturb", "1:ffn_up:3", "--report", dir});
  ASSERT_EQ(r.exit_code, 1) << r.out;
  tzero::test::PageCheck c = tzero::test::check_page(dir + "/index.html");
  expect_page_layout(c, false, "perturbed audit");
  EXPECT_GE(c.svgs, 1);
  EXPECT_NE(c.verdict_text.find("Contract broken"), std::string::npos) << c.verdict_text;
  EXPECT_NE(c.dom.find("first divergences"), std::string::npos);
  // A clean run: a pass at the top, fast mode's differences marked as expected, not failures.
  r = tzero::test::run_tzero({"audit", "-m", model, "-n", "4", "--report", dir, "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  c = tzero::test::check_page(dir + "/index.html");
  expect_page_layout(c, true, "clean audit");
  EXPECT_NE(c.verdict_text.find("Contract holds"), std::string::npos) << c.verdict_text;
  EXPECT_NE(c.dom.find("<span class=\"expected\">expected</span> Fast mode"), std::string::npos);
  EXPECT_EQ(c.dom.find("class=\"bad\""), std::string::npos) << "nothing red in a pass";
}

TEST(VerifyReport, RendersInHeadlessChromiumWithTheDifferenceMarked) {
  if (tzero::test::chromium_path().empty())
    GTEST_SKIP() << "chromium absent: make test installs it (apt-get install chromium)";
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string dir = tzero::test::scratch_dir() + "/verify-render";
  std::filesystem::create_directories(dir);
  tzero::test::write_file(dir + "/p.jsonl",
                          R"({"id": "a", "prompt": "Once upon a time", "max_tokens": 16})"
                          "\n");
  auto r = tzero::test::run_tzero(
      {"lock", dir + "/p.jsonl", "-m", model, "--kv-type", "f16", "-o", dir + "/lock.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = tzero::test::run_tzero({"verify", dir + "/lock.json", "--kv-type", "f32", "--html",
                              dir + "/verify.html", "--explain", "0"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const tzero::test::PageCheck c = tzero::test::check_page(dir + "/verify.html");
  expect_page_layout(c, false, "drifted verify");
  EXPECT_NE(c.verdict_text.find("1 of 1 requests drifted from the lock"), std::string::npos)
      << c.verdict_text;
  EXPECT_NE(c.dom.find("<mark>"), std::string::npos) << "the differing text is marked";
}
