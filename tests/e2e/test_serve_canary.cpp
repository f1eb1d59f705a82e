// The drift canary (tzero serve --canary LOCK, lock/canary.h): the server reruns a lock's
// requests through its own engine, between user requests, and says when they drift: in its
// log (what differs, the first op that changed), on /metrics and, when asked, on /health.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "support/serve_process.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::run_tzero;

namespace {

const char* kPrompts =
    R"({"id": "greedy", "prompt": "Once upon a time", "max_tokens": 10, "temperature": 0}
{"id": "chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 0.7, "seed": 3}
)";

// A lock of kPrompts on the tiny model with these extra flags; returns its path.
std::string make_lock(const std::string& name, const std::vector<std::string>& flags) {
  const std::string dir = tzero::test::scratch_dir();
  tzero::test::write_file(dir + "/canary-prompts.jsonl", kPrompts);
  const std::string lock = dir + "/" + name;
  std::vector<std::string> args = {"lock",
                                   dir + "/canary-prompts.jsonl",
                                   "-o",
                                   lock,
                                   "-m",
                                   tzero::test::generated_model("tiny", "q8_0"),
                                   "--chat-template",
                                   "chatml"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = run_tzero(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return lock;
}

// A metric's value on /metrics (-1 when absent).
double metric(const tzero::test::ServeProcess& srv, const std::string& name) {
  const auto m = srv.client()->Get("/metrics");
  if (!m || m->status != 200) return -1;
  const size_t at = m->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(m->body.substr(at + name.size() + 2));
}

// Polls until the metric reaches `at_least` (up to 60 s).
bool wait_metric(const tzero::test::ServeProcess& srv, const std::string& name, double at_least) {
  for (int i = 0; i < 600; ++i) {
    if (metric(srv, name) >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

// A lock made here, served with the same configuration: every run identical, the success time
// set, /health ok; user requests in between get `tzero run`'s bits.
TEST(ServeCanary, RerunsTheLockAndFindsNoDrift) {
  const std::string lock = make_lock("canary-same.json", {});
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  tzero::test::ServeProcess srv({"-m", model, "-t", "2", "--canary", lock, "--canary-interval",
                                 "0.2s", "--canary-degrades-health"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  for (int i = 0; i < 3; ++i) {  // user traffic while the canary runs
    int st = 0;
    const json r = tzero::test::post_json(
        *srv.client(), "/v1/completions",
        {{"prompt", "The little dog"}, {"max_tokens", 8}, {"temperature", 0}}, &st);
    ASSERT_EQ(st, 200) << r.dump();
    const auto run = run_tzero({"run", "-m", model, "-p", "The little dog", "-n", "8", "--json"});
    EXPECT_EQ(r["choices"][0]["tzero"]["logits_digest"], json::parse(run.out)["logits_digest"]);
  }
  ASSERT_TRUE(wait_metric(srv, "tzero_canary_runs_total", 3)) << srv.stderr_text();
  EXPECT_EQ(metric(srv, "tzero_canary_drift_total"), 0);
  EXPECT_GT(metric(srv, "tzero_canary_last_success_timestamp_seconds"), 1.7e9);
  const auto h = srv.client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200) << h->body;
  const json hj = json::parse(h->body);
  EXPECT_EQ(hj["status"], "ok");
  EXPECT_EQ(hj["canary"]["state"], "ok");
  EXPECT_FALSE(hj["canary"].contains("lock"));  // /health needs no key: no file paths
  EXPECT_EQ(srv.stop(SIGTERM), 0);
  const std::string err = srv.stderr_text();
  EXPECT_NE(err.find("tzero serve: canary: run 1: 2 of 2 identical\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("canary: drift"), std::string::npos) << err;
  EXPECT_EQ(err.find("was made"), std::string::npos) << err;  // same configuration and machine
}

// A lock made with an f16 KV cache, its environment edited as if made elsewhere: the server
// says at start which configuration and environment entries differ, then logs the drift with
// the first op that changed, counts it, and /health reports degraded.
TEST(ServeCanary, DriftIsLoggedExplainedCountedAndDegradesHealth) {
  const std::string made = make_lock("canary-f16.json", {"--kv-type", "f16"});
  json lock = json::parse(tzero::test::read_file(made));
  lock["environment"]["cpu"]["model"] = "Another CPU";
  const std::string edited = tzero::test::scratch_dir() + "/canary-elsewhere.json";
  tzero::test::write_file(edited, lock.dump(1));
  tzero::test::ServeProcess srv({"-m", tzero::test::generated_model("tiny", "q8_0"), "-t", "2",
                                 "--canary", edited, "--canary-interval", "1h",
                                 "--canary-degrades-health"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  ASSERT_TRUE(wait_metric(srv, "tzero_canary_runs_total", 1)) << srv.stderr_text();
  EXPECT_EQ(metric(srv, "tzero_canary_drift_total"), 2);
  EXPECT_EQ(metric(srv, "tzero_canary_last_success_timestamp_seconds"), 0);
  const auto h = srv.client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503) << h->body;
  const json hj = json::parse(h->body);
  EXPECT_EQ(hj["status"], "degraded");
  EXPECT_EQ(hj["canary"]["state"], "drifted");
  EXPECT_EQ(hj["canary"]["drifted_requests"], 2);
  EXPECT_EQ(srv.stop(SIGTERM), 0);
  const std::string err = srv.stderr_text();
  EXPECT_NE(err.find("canary: " + edited +
                     " was made with another configuration, so its answers may differ: "
                     "kv_cache: lock \"f16\", now \"f32\"\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("canary: " + edited +
                     " was made on another machine or version: cpu.model: lock \"Another "
                     "CPU\", now \""),
            std::string::npos)
      << err;
  EXPECT_TRUE(std::regex_search(
      err, std::regex("canary: drift: [^\n]*\\.json:[0-9]+: greedy: DRIFTED: [^\n]*logits_digest")))
      << err;
  // The first drift is explained: the f16 cache first changes the attention output.
  EXPECT_TRUE(std::regex_search(
      err, std::regex("\\.json:[0-9]+: the first op that changed: position 0, layer 0, kqv_out")))
      << err;
  EXPECT_NE(err.find("canary: run 1: 0 of 2 identical, 2 drifted\n"), std::string::npos) << err;
}

// What the canary cannot use is refused before the server starts, with the reason.
TEST(ServeCanary, BadLocksAndFlagsAreRefused) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  auto r = run_tzero({"serve", "-m", model, "--canary", "/nonexistent/lock.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/lock.json"), std::string::npos) << r.err;
  const std::string lock = make_lock("canary-flags.json", {});
  r = run_tzero({"serve", "-m", model, "--canary", lock, "--canary-interval", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "tzero: error: --canary-interval: 'soon' is not a duration (N seconds, or Ns, "
            "Nm, Nh; above 0)\n");
  r = run_tzero({"serve", "-m", model, "--canary-interval", "10s"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--canary-interval requires --canary"), std::string::npos) << r.err;
}
