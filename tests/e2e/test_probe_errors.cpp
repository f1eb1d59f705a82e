// tzero probe against a server that fails some requests as llama.cpp's does when a completion
// is not valid UTF-8 (HTTP 500 and a JSON error body): tests/support/erroring_openai_server.py, a
// real HTTP server (Python standard library) in a subprocess. A failed request is recorded
// (status and message, in report.json, the HTML page and the table) and the probe goes on;
// the exit status is the comparison's (0 identical, 1 diverged) while something could be
// compared, and 2 when nothing could. Bounded: the server exits on its own after 120 s, and each
// probe sends a few dozen requests to a local server.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace {
using nlohmann::json;

const std::string kUtf8Error =
    "[json.exception.type_error.316] invalid UTF-8 byte at index 3: 0xE6";

// The Python server as a subprocess; killed at destruction.
class ErroringServer {
 public:
  explicit ErroringServer(const std::vector<std::string>& args) {
    std::string cmd = "exec python3 '" TZ_SOURCE_DIR "/tests/support/erroring_openai_server.py'";
    for (const auto& a : args) cmd += " '" + a + "'";
    pipe_ = popen((cmd + " 2>/dev/null").c_str(), "r");
    if (!pipe_) return;
    char line[128] = {};
    if (std::fgets(line, sizeof line, pipe_)) std::sscanf(line, "PORT %d PID %d", &port_, &pid_);
  }
  ~ErroringServer() {
    if (pid_ > 0) kill(pid_, SIGKILL);
    if (pipe_) pclose(pipe_);
  }
  bool ok() const { return port_ > 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  FILE* pipe_ = nullptr;
  int port_ = 0, pid_ = 0;
};

std::string prompts_file(const std::vector<std::string>& prompts) {
  static int n = 0;
  const std::string path = tzero::test::scratch_dir() + "/err-prompts-" + std::to_string(n++);
  tzero::test::write_file(path, json(prompts).dump());
  return path;
}

tzero::test::CliResult probe(const ErroringServer& s, const std::vector<std::string>& prompts,
                             const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "probe",  "--base-url", s.url(),        "--model", "m",         "-f", prompts_file(prompts),
      "--runs", "2",          "--max-tokens", "6",       "--timeout", "20"};
  args.insert(args.end(), extra.begin(), extra.end());
  return tzero::test::run_tzero(args);
}

json error_group(int status, const std::string& message, int count) {
  return {{"status", status}, {"message", message}, {"count", count}};
}
}  // namespace

// Proves: HTTP 500 on probed and filler requests is recorded and the probe goes on; the rest is
// compared (identical: exit 0); the errors are in report.json, the page and the table, with
// their status and message.
TEST(ProbeErrors, ServerErrorsAreRecordedAndTheProbeGoesOn) {
  ErroringServer server({"--fail-prompt", "Always fails", "--fail-nth", "Sometimes fails=2",
                         "--fail-prompt", "Explain how a hash table works."});
  ASSERT_TRUE(server.ok()) << "python3 could not start the test server";
  const std::string dir = tzero::test::scratch_dir() + "/probe-errors";
  // 3 prompts x 2 loaded runs with 4 fillers: filler prompts 0..11 twice, so the failing
  // filler (the third) is sent twice.
  const auto r = probe(server, {"Once upon a time", "Sometimes fails", "Always fails"},
                       {"--temperature", "0", "--concurrency", "4", "--report", dir});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 filler request(s) failed: HTTP 500 '" + kUtf8Error + "' (2)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("7 probed request(s) failed (recorded, not compared): HTTP 500 '" +
                       kUtf8Error + "' (7)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("IDENTICAL: every run that answered matched its reference bit for bit (11 "
                       "runs)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("prompt 2 greedy solo run 2: failed, recorded: HTTP 500 '" + kUtf8Error),
            std::string::npos)
      << r.err;

  const json j = json::parse(tzero::test::read_file(dir + "/report.json"));
  EXPECT_EQ(j["identical"], true);
  EXPECT_EQ(j["comparable"], true);
  EXPECT_EQ(j["requests"], 18);
  EXPECT_EQ(j["failed_requests"], 7);
  EXPECT_EQ(j["errors"], json::array({error_group(500, kUtf8Error, 7)}));
  EXPECT_EQ(j["filler_requests"], 24);
  EXPECT_EQ(j["filler_errors"], 2);
  EXPECT_EQ(j["filler_error_reasons"], json::array({error_group(500, kUtf8Error, 2)}));
  ASSERT_EQ(j["prompts"].size(), 3u);
  const json& ok = j["prompts"][0];
  EXPECT_EQ(ok["failed_runs"], 0);
  EXPECT_EQ(ok["unique_outputs"], 1);
  const json& some = j["prompts"][1];
  EXPECT_EQ(some["compared"], true);
  EXPECT_EQ(some["failed_runs"], 1);
  EXPECT_EQ(some["unique_outputs"], 1);
  EXPECT_EQ(some["modes"]["solo"]["failed"], 1);
  EXPECT_EQ(some["reference_run"], (json{{"mode", "solo"}, {"run", 1}}));
  EXPECT_TRUE(some["run_details"][1]["identical"].is_null());
  EXPECT_EQ(some["run_details"][1]["error"], (json{{"status", 500}, {"message", kUtf8Error}}));
  EXPECT_FALSE(some["run_details"][2].contains("error"));
  const json& none = j["prompts"][2];
  EXPECT_EQ(none["compared"], false);
  EXPECT_EQ(none["failed_runs"], 6);
  EXPECT_EQ(none["unique_outputs"], 0);
  EXPECT_TRUE(none["reference_text"].is_null());

  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("<h2>Failed requests</h2><p>7 probed request(s) failed."), std::string::npos);
  EXPECT_NE(html.find("<h2>Failed filler requests</h2><p>2 of 24 filler request(s) failed"),
            std::string::npos);
  EXPECT_NE(html.find("<td>2</td><td>HTTP 500</td><td><code>" + kUtf8Error + "</code>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class='bad'>not compared</td>"), std::string::npos);
  EXPECT_NE(html.find("<td colspan='4' class='bad'>no run answered</td>"), std::string::npos);
  // The reference answers are shown; with no divergence there is no chart and no legend.
  EXPECT_NE(html.find("<h2>Reference answers</h2>"), std::string::npos);
  EXPECT_NE(html.find("No run diverged: nothing to place."), std::string::npos);
  EXPECT_EQ(html.find("first divergence positions"), std::string::npos);
  EXPECT_EQ(html.find("under concurrent load"), std::string::npos);
  EXPECT_EQ(html.find("Diverging runs"), std::string::npos);
}

// Proves: with errors recorded, a divergence among the answers still exits 1, and a run whose
// text is the reference's but whose logprob differs by one ulp is shown with the position and
// both numbers, as written and as double bits.
TEST(ProbeErrors, DivergenceBesideErrorsExitsOneAndShowsTheBits) {
  ErroringServer server({"--fail-prompt", "Always fails", "--drift-nth", "Drifts=3"});
  ASSERT_TRUE(server.ok());
  const std::string dir = tzero::test::scratch_dir() + "/probe-errors-drift";
  const auto r = probe(server, {"Drifts", "Always fails"},
                       {"--temperature", "0", "--concurrency", "0", "--report", dir, "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["identical"], false);
  EXPECT_EQ(j["failed_requests"], 4);
  const json& p = j["prompts"][0];
  EXPECT_EQ(p["unique_outputs"], 2);
  EXPECT_EQ(p["first_divergence"], 2);
  EXPECT_EQ(p["diverged_runs"], 1);
  EXPECT_EQ(p["max_logprob_diff"].get<double>(), 1.1102230246251565e-16);
  EXPECT_EQ(p["run_details"][2]["identical"], false);  // stream run 1, the 3rd request
  EXPECT_EQ(p["run_details"][2]["text"], p["reference_text"]);
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("text identical"), std::string::npos);
  EXPECT_NE(html.find("<li>token 2 <code>'"), std::string::npos) << "position and token";
  EXPECT_NE(html.find(", logprob: reference <code>-0.75</code> <small>(0xbfe8000000000000)"
                      "</small>, this run <code>-0.7499999999999999</code> "
                      "<small>(0xbfe7ffffffffffff)</small>"),
            std::string::npos);
  EXPECT_NE(html.find("<h2>Failed requests</h2>"), std::string::npos);
  EXPECT_NE(html.find("first divergence positions"), std::string::npos);
  EXPECT_NE(html.find("under concurrent load"), std::string::npos) << "the chart has its legend";
}

// Proves: when every request fails there is nothing to compare: exit 2 with one line that says
// why, after the report (with every error) has been written and the JSON printed.
TEST(ProbeErrors, NothingComparableExitsTwo) {
  ErroringServer server({"--fail-prompt", "Always fails"});
  ASSERT_TRUE(server.ok());
  const std::string dir = tzero::test::scratch_dir() + "/probe-errors-none";
  const auto r = probe(server, {"Always fails"}, {"--concurrency", "0", "--report", dir, "--json"});
  ASSERT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("tzero: error: nothing could be compared: no prompt and sampling had two "
                       "runs that answered (8 of 8 probed requests failed: HTTP 500 '" +
                       kUtf8Error + "' (8))"),
            std::string::npos)
      << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["comparable"], false);
  EXPECT_EQ(j["identical"], false);
  EXPECT_EQ(j["failed_requests"], 8);
  EXPECT_EQ(j, json::parse(tzero::test::read_file(dir + "/report.json")));
  const std::string html = tzero::test::read_file(dir + "/index.html");
  EXPECT_NE(html.find("Nothing could be compared"), std::string::npos);
  EXPECT_NE(html.find(kUtf8Error), std::string::npos);
}
