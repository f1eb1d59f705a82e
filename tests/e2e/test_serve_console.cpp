// The server's console (GET /, server/console.h) and the canary's last report (GET /canary):
// served by the binary itself, measured in headless Chromium (support/browser.h): the verdict
// banner first (OK, or DRIFT when the canary drifted), no sideways scroll, the live figures
// filled from /health and /metrics; authenticated like the API when --api-key is set (Basic
// for a browser, Bearer too).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/browser.h"
#include "support/serve_process.h"
#include "support/test_support.h"

namespace {

std::string make_lock(const std::string& name, const std::vector<std::string>& flags) {
  const std::string dir = tzero::test::scratch_dir();
  tzero::test::write_file(dir + "/console-prompts.jsonl",
                          R"({"id": "a", "prompt": "Once upon a time", "max_tokens": 8})"
                          "\n");
  std::vector<std::string> args = {"lock", dir + "/console-prompts.jsonl",
                                   "-o",   dir + "/" + name,
                                   "-m",   tzero::test::generated_model("tiny", "q8_0")};
  args.insert(args.end(), flags.begin(), flags.end());
  EXPECT_EQ(tzero::test::run_tzero(args).exit_code, 0);
  return dir + "/" + name;
}

// Waits until /health reports a finished canary run (up to 60 s).
void wait_canary_run(const tzero::test::ServeProcess& srv) {
  for (int i = 0; i < 600; ++i) {
    const auto h = srv.client()->Get("/health");
    if (h && h->body.find("\"runs\":0") == std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

TEST(ServeConsole, ShowsTheServerAndItsCanaryInHeadlessChromium) {
  if (tzero::test::chromium_path().empty())
    GTEST_SKIP() << "chromium absent: make test installs it (apt-get install chromium)";
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  {
    tzero::test::ServeProcess srv(
        {"-m", model, "-t", "2", "--canary", make_lock("console-clean.json", {})});
    ASSERT_TRUE(srv.ok()) << srv.stderr_text();
    wait_canary_run(srv);
    const std::string base = "http://127.0.0.1:" + std::to_string(srv.port());
    const tzero::test::PageCheck c = tzero::test::check_page(base + "/");
    ASSERT_EQ(c.error, "");
    EXPECT_GE(c.verdict_top, 0);
    EXPECT_LT(c.verdict_top, 120);
    EXPECT_EQ(c.verdict_class, "verdict pass") << c.verdict_text;
    EXPECT_NE(c.verdict_text.find("Serving in deterministic mode under fingerprint tz-"),
              std::string::npos)
        << c.verdict_text;
    EXPECT_LE(c.overflow_x, 0);
    EXPECT_GT(c.screenshot_bytes, 20000u);
    // The script filled the live figures from /health and /metrics.
    EXPECT_NE(c.dom.find("<span id=\"status\">ok</span>"), std::string::npos) << c.dom;
    EXPECT_NE(c.dom.find("<span id=\"running\">0 of 8</span>"), std::string::npos);
    EXPECT_NE(c.dom.find("<span id=\"canary\">ok: "), std::string::npos);
    // The canary's last report is verify's page, passing.
    const tzero::test::PageCheck r = tzero::test::check_page(base + "/canary");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.verdict_class, "verdict pass") << r.verdict_text;
    EXPECT_LT(r.verdict_top, 120);
  }
  // A canary that drifts: the console says DRIFT first.
  tzero::test::ServeProcess srv(
      {"-m", model, "-t", "2", "--canary", make_lock("console-f16.json", {"--kv-type", "f16"})});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  wait_canary_run(srv);
  const std::string base = "http://127.0.0.1:" + std::to_string(srv.port());
  const tzero::test::PageCheck c = tzero::test::check_page(base + "/");
  EXPECT_EQ(c.verdict_class, "verdict fail") << c.verdict_text;
  EXPECT_NE(c.verdict_text.find("DRIFT"), std::string::npos) << c.verdict_text;
  const tzero::test::PageCheck r = tzero::test::check_page(base + "/canary");
  EXPECT_EQ(r.verdict_class, "verdict fail") << r.verdict_text;
  EXPECT_NE(r.dom.find("<mark"), std::string::npos);  // where the texts differ (or a gap)
}

// With --api-key the pages ask for it (Basic: any user, the key as password) and take Bearer
// too; /health stays open; /canary without a canary is 404.
TEST(ServeConsole, PagesAreAuthenticatedLikeTheApi) {
  tzero::test::ServeProcess srv(
      {"-m", tzero::test::generated_model("tiny", "q8_0"), "--api-key", "k3y"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  auto c = srv.client();
  auto r = c->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Basic realm=\"tzero\", charset=\"UTF-8\"");
  r = c->Get("/", {{"Authorization", "Basic dXNlcjpub3BlCg=="}});  // user:nope
  EXPECT_EQ(r->status, 401);
  r = c->Get("/", {{"Authorization", "Basic YW55b25lOmszeQ=="}});  // anyone:k3y
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'"),
            std::string::npos);
  EXPECT_NE(r->body.find("--api-key KEY"), std::string::npos);
  r = c->Get("/", {{"Authorization", "Bearer k3y"}});
  EXPECT_EQ(r->status, 200);
  r = c->Get("/metrics", {{"Authorization", "Basic YW55b25lOmszeQ=="}});
  EXPECT_EQ(r->status, 200);  // the console's script reads it with the browser's credentials
  EXPECT_EQ(c->Get("/health")->status, 200);
  int st = 0;  // generation takes the API's Bearer key only
  httplib::Headers basic = {{"Authorization", "Basic YW55b25lOmszeQ=="}};
  const auto post =
      c->Post("/v1/completions", basic, R"({"prompt": "hi", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(post);
  st = post->status;
  EXPECT_EQ(st, 401);
  r = c->Get("/canary", {{"Authorization", "Bearer k3y"}});
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(srv.stop(SIGTERM), 0);
}
