// tzero probe, end to end: the real binary against a fake OpenAI-compatible server in this
// process (deterministic, or deliberately not), and against the real `tzero serve` when built.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "e2e/fake_openai_server.h"
#include "support/browser.h"
#include "support/test_support.h"

extern char** environ;

namespace {
using nlohmann::json;
using tzero::test::FakeOpenAIServer;
using tzero::test::FakeServerOptions;

std::string prompts_file(const std::vector<std::string>& prompts) {
  static int n = 0;
  const std::string path = tzero::test::scratch_dir() + "/probe-prompts-" + std::to_string(n++);
  tzero::test::write_file(path, json(prompts).dump());
  return path;
}

// Runs the probe with --json and small settings; extra arguments are appended.
tzero::test::CliResult probe(const std::string& url, const std::vector<std::string>& extra,
                             const std::vector<std::string>& prompts = {"Once upon a time",
                                                                        "Two plus two is"}) {
  std::vector<std::string> args = {
      "probe", "--base-url",          url,      "--model", "fake",
      "-f",    prompts_file(prompts), "--runs", "2",       "--concurrency",
      "2",     "--max-tokens",        "8",      "--json"};
  // An option given in `extra` replaces the default above.
  for (size_t i = 0; i < extra.size(); ++i)
    for (size_t a = 0; a + 1 < args.size(); ++a)
      if (extra[i] == args[a] && extra[i].rfind("--", 0) == 0 && args[a + 1].rfind("--", 0) != 0)
        args.erase(args.begin() + long(a), args.begin() + long(a) + 2);
  args.insert(args.end(), extra.begin(), extra.end());
  return tzero::test::run_tzero(args);
}

json parse(const tzero::test::CliResult& r) {
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON: " << e.what() << "\n" << r.out << "\n" << r.err;
    return json::object();
  }
}

// A port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}
}  // namespace

TEST(Probe, IdenticalServerExitsZero) {
  FakeOpenAIServer server({});
  for (const bool chat : {false, true}) {
    const std::string dir = tzero::test::scratch_dir() + "/probe-ok-" + std::to_string(chat);
    std::vector<std::string> extra = {"--report", dir};
    if (chat) extra.push_back("--chat");
    const auto r = probe(server.url(), extra);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const json j = parse(r);
    EXPECT_TRUE(j["identical"].get<bool>());
    EXPECT_TRUE(j["logprobs"].get<bool>());
    EXPECT_EQ(j["configuration"]["chat"], chat);
    ASSERT_EQ(j["prompts"].size(), 2u);
    for (const auto& p : j["prompts"]) {
      EXPECT_EQ(p["unique_outputs"], 1);
      EXPECT_TRUE(p["first_divergence"].is_null());
      EXPECT_EQ(p["max_logprob_diff"], 0.0);
      EXPECT_EQ(p["runs"], 6);  // 2 solo, 2 streamed, 2 loaded
      EXPECT_EQ(p["seeded"]["unique_outputs"], 1);
      EXPECT_EQ(p["seeded"]["seed"], 1234);
      EXPECT_EQ(p["modes"]["loaded"]["runs"], 2);
    }
    ASSERT_EQ(j["system_fingerprints"].size(), 1u);
    EXPECT_EQ(j["system_fingerprints"][0]["value"], "fp_fake");
    EXPECT_EQ(j["system_fingerprints"][0]["runs"], 24);
    EXPECT_EQ(j["filler_requests"], 16);
    EXPECT_GT(j["latency_ms"]["loaded"]["p99"].get<double>(), 0.0);
    EXPECT_NE(r.err.find("[24/24] prompt 2 seeded loaded run 2"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::exists(dir + "/report.json"));
    EXPECT_EQ(json::parse(tzero::test::read_file(dir + "/report.json"))["identical"], true);
  }
}

TEST(Probe, DetectsOneUlpPerturbation) {
  FakeServerOptions o;
  o.perturb_every = 2;  // the 2nd, 4th, 6th request of each prompt
  o.position = 3;
  FakeOpenAIServer server(o);
  const auto r = probe(server.url(), {});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const json j = parse(r);
  EXPECT_FALSE(j["identical"].get<bool>());
  for (const auto& p : j["prompts"]) {
    EXPECT_FALSE(p["identical"].get<bool>());
    EXPECT_EQ(p["unique_outputs"], 2);
    EXPECT_EQ(p["first_divergence"], 3);
    EXPECT_GT(p["max_logprob_diff"].get<double>(), 0.0);
    EXPECT_LT(p["max_logprob_diff"].get<double>(), 1e-12) << "one ulp";
    EXPECT_EQ(p["diverged_runs"], 3);
    EXPECT_EQ(p["seeded"]["unique_outputs"], 2);
    EXPECT_EQ(p["seeded"]["first_divergence"], 3);
  }
}

TEST(Probe, DetectsTokenChangedUnderLoad) {
  FakeServerOptions o;
  o.token_under_load = true;
  o.token_delay_ms = 20;  // fillers stay in flight for 160 ms, even on a busy machine
  o.position = 5;
  FakeOpenAIServer server(o);
  // One prompt, greedy only: nothing runs after the loaded runs.
  const std::string dir = tzero::test::scratch_dir() + "/probe-load";
  const auto r =
      probe(server.url(), {"--chat", "--temperature", "0", "--report", dir}, {"Hello there"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const json j = parse(r);
  EXPECT_FALSE(j["identical"].get<bool>());
  const json& p = j["prompts"][0];
  EXPECT_EQ(p["unique_outputs"], 2);
  EXPECT_EQ(p["first_divergence"], 5);
  EXPECT_GT(p["max_logprob_diff"].get<double>(), 0.0);
  EXPECT_EQ(p["modes"]["solo"]["diverged"], 0);
  EXPECT_EQ(p["modes"]["stream"]["diverged"], 0);
  EXPECT_EQ(p["modes"]["loaded"]["diverged"], 2);
  EXPECT_FALSE(p.contains("seeded"));
  EXPECT_NE(p["run_details"][4]["text"].get<std::string>().find(" CHANGED"), std::string::npos);
  // The page marks the differing stretch in both texts and names the changed token.
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("<div>this run: <code class='text'>"), std::string::npos);
  EXPECT_NE(html.find("<mark>CHANGED</mark>"), std::string::npos);
  EXPECT_NE(html.find("<li>token 5 <code>'"), std::string::npos);
  EXPECT_NE(html.find("&rarr; <code>' CHANGED'</code>: the sampled token changed"),
            std::string::npos);
}

TEST(Probe, TextOnlyServer) {
  FakeServerOptions o;
  o.logprobs = false;
  {
    FakeOpenAIServer server(o);
    const auto r = probe(server.url(), {});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const json j = parse(r);
    EXPECT_TRUE(j["identical"].get<bool>());
    EXPECT_FALSE(j["logprobs"].get<bool>());
    EXPECT_EQ(j["divergence_unit"], "byte");
    EXPECT_TRUE(j["prompts"][0]["max_logprob_diff"].is_null());
    EXPECT_EQ(j["prompts"][0]["unique_outputs"], 1);
  }
  o.token_under_load = true;
  o.token_delay_ms = 20;
  FakeOpenAIServer server(o);
  const auto r = probe(server.url(), {"--temperature", "0"}, {"Hello"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  const json j = parse(r);
  const json& p = j["prompts"][0];
  EXPECT_EQ(p["unique_outputs"], 2);
  const std::string ref = p["reference_text"], changed = p["run_details"][4]["text"];
  size_t common = 0;
  while (common < ref.size() && ref[common] == changed[common]) ++common;
  EXPECT_EQ(p["first_divergence"], common) << "a byte offset";
}

TEST(Probe, TableOnTheTerminal) {
  FakeServerOptions o;
  o.perturb_every = 3;
  FakeOpenAIServer server(o);
  const auto r =
      tzero::test::run_tzero({"probe", "--base-url", server.url() + "/v1", "--model", "m", "--runs",
                              "2", "--concurrency", "1", "--max-tokens", "6"});
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("unique"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Once upon a time"), std::string::npos) << r.out;  // a built-in prompt
  EXPECT_NE(r.out.find("fp_fake"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DIVERGED"), std::string::npos) << r.out;
}

TEST(Probe, RetriesAfter429) {
  FakeServerOptions o;
  o.fail_429_first = 2;
  FakeOpenAIServer server(o);
  const auto r = probe(server.url(), {"--temperature", "0", "--concurrency", "0"}, {"Hi"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(parse(r)["retries"], 2);
}

TEST(Probe, UnreachableServerExitsTwo) {
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  const auto r = probe(url, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tzero: error: cannot reach " + url), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("connection refused"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(Probe, HttpErrorQuotesTheServer) {
  FakeServerOptions o;
  o.only_model = "the-model";
  FakeOpenAIServer server(o);
  const auto r = probe(server.url(), {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("HTTP 404: The model `fake` does not exist."), std::string::npos) << r.err;
}

TEST(Probe, TimeoutExitsTwo) {
  FakeServerOptions o;
  o.delay_ms = 600;
  FakeOpenAIServer server(o);
  const auto r = probe(server.url(), {"--timeout", "0.2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no answer within"), std::string::npos) << r.err;
}

TEST(Probe, BadInputExitsTwo) {
  const std::string empty = tzero::test::scratch_dir() + "/probe-empty.txt";
  tzero::test::write_file(empty, "\n\n");
  auto r = tzero::test::run_tzero(
      {"probe", "--base-url", "http://127.0.0.1:1", "--model", "m", "-f", empty});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no prompts"), std::string::npos) << r.err;
  r = tzero::test::run_tzero({"probe", "--base-url", "ftp://example", "--model", "m"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not an http:// or https:// URL"), std::string::npos) << r.err;
}

TEST(Probe, HtmlReport) {
  FakeServerOptions o;
  o.perturb_every = 2;
  FakeOpenAIServer server(o);
  const std::string dir = tzero::test::scratch_dir() + "/probe-report";
  const auto r = probe(server.url(), {"--report", dir});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("Unique outputs per prompt"), std::string::npos);
  EXPECT_NE(html.find("aria-label='first divergence positions'><text"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(json::parse(tzero::test::read_file(dir + "/report.json"))["identical"], false);
  if (tzero::test::chromium_path().empty())
    GTEST_SKIP() << "chromium absent (make test installs it): checked the file only";
  // In headless Chromium: the failing verdict first, no sideways scroll, charts that draw.
  const tzero::test::PageCheck c = tzero::test::check_page(dir + "/index.html");
  ASSERT_EQ(c.error, "");
  EXPECT_GE(c.verdict_top, 0);
  EXPECT_LT(c.verdict_top, 120);
  EXPECT_EQ(c.verdict_class, "verdict fail") << c.verdict_text;
  EXPECT_NE(c.verdict_text.find("Diverged"), std::string::npos) << c.verdict_text;
  EXPECT_LE(c.overflow_x, 0);
  EXPECT_GE(c.svgs, 1);
  EXPECT_EQ(c.empty_svgs, 0);
  EXPECT_GT(c.screenshot_bytes, 20000u);
  EXPECT_NE(c.dom.find("<table>"), std::string::npos);
  EXPECT_NE(c.dom.find("Diverging runs"), std::string::npos);
}

// The real server: a generated model, 8 concurrent fillers, every run identical.
TEST(Probe, ProbeAgainstTzeroServe) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const std::string log = tzero::test::scratch_dir() + "/serve.log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = tzero::test::tzero_command();
  argv_s.insert(argv_s.end(), {"serve", "-m", model, "--port", "0"});
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  struct Reaper {
    pid_t pid;
    bool exited = false;
    ~Reaper() {
      if (exited) return;
      kill(pid, SIGTERM);
      for (int i = 0; i < 100; ++i) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{pid};
  static const std::regex listening(R"(listening on (http://[^\s]+))");
  std::string url, err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (url.empty() && std::chrono::steady_clock::now() < deadline) {
    err = tzero::test::read_file(log);
    std::smatch m;
    if (std::regex_search(err, m, listening)) {
      url = m[1].str();
      break;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      reaper.exited = true;
      err = tzero::test::read_file(log);
      FAIL() << "tzero serve exited before listening: " << err;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(url.empty()) << "tzero serve did not say where it listens within 60 s: " << err;
  // The model's name as the server lists it (any name may do, but ask).
  std::string name = "tiny";
  {
    const std::regex hp(R"(^(http://[^/]+))");
    std::smatch m;
    std::regex_search(url, m, hp);
    httplib::Client cli(m[1].str());
    if (auto res = cli.Get("/v1/models"); res && res->status == 200) {
      const json j = json::parse(res->body, nullptr, false);
      if (j.is_object() && j.contains("data") && !j["data"].empty())
        name = j["data"][0].value("id", name);
    }
  }
  const auto r = tzero::test::run_tzero({"probe", "--base-url", url, "--model", name, "--runs", "2",
                                         "--concurrency", "8", "--max-tokens", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = parse(r);
  EXPECT_TRUE(j["identical"].get<bool>());
  for (const auto& p : j["prompts"]) {
    EXPECT_EQ(p["unique_outputs"], 1) << p["prompt"];
    EXPECT_EQ(p["seeded"]["unique_outputs"], 1) << p["prompt"];
  }
}

// For trying the probe by hand: serves the fake server for TZ_FAKE_SECONDS (default 60) seconds.
//   tz_e2e --gtest_also_run_disabled_tests --gtest_filter=Probe.DISABLED_ServeFakeServer
// TZ_FAKE_PERTURB=N perturbs every N-th request; TZ_FAKE_LOAD=1 changes a token under load;
// TZ_FAKE_NO_LOGPROBS=1 serves text only.
TEST(Probe, DISABLED_ServeFakeServer) {
  auto env = [](const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : fallback;
  };
  FakeServerOptions o;
  o.perturb_every = env("TZ_FAKE_PERTURB", 0);
  o.token_under_load = env("TZ_FAKE_LOAD", 0) != 0;
  o.logprobs = env("TZ_FAKE_NO_LOGPROBS", 0) == 0;
  o.max_tokens = 16;
  FakeOpenAIServer server(o);
  std::printf("fake server: %s\n", server.url().c_str());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(env("TZ_FAKE_SECONDS", 60)));
}

// Proves: a prompts file that is not UTF-8 and a --report directory that cannot be written are
// refused at once with one line and exit 2 (they used to abort, the second one only after the
// whole probe had run).
TEST(Probe, BadPromptsFileAndReportDirExit2) {
  const std::string dir = tzero::test::scratch_dir();
  tzero::test::write_file(dir + "/bad.txt", "abc\xff\xfe\n");
  auto r = tzero::test::run_tzero(
      {"probe", "--base-url", "http://127.0.0.1:1/v1", "--model", "x", "-f", dir + "/bad.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
  tzero::test::write_file(dir + "/afile", "x");
  r = tzero::test::run_tzero(
      {"probe", "--base-url", "http://127.0.0.1:1/v1", "--model", "x", "--report", dir + "/afile"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--report"), std::string::npos) << r.err;
}
