// `tzero serve` over a request's and the process' life: a client that drops mid-stream gets
// its request cancelled and its KV blocks back in the pool; SIGTERM during a stream ends it
// cleanly and the process exits 0; the official OpenAI client library (npm `openai`, pinned in
// tests/openai/, installed by `make test-openai`) talks to it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

json health(tzero::test::ServeProcess& srv) {
  auto res = srv.client()->Get("/health");
  return res ? json::parse(res->body, nullptr, false) : json();
}

TEST(ServeLifecycle, DisconnectMidStreamCancelsAndFreesKv) {
  auto srv = tzero::test::serve_tiny({"--parallel", "2"});
  ASSERT_TRUE(srv->ok());
  const json body = {{"prompt", "Keep talking"},
                     {"max_tokens", 200},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true}};
  const std::string got = tzero::test::stream_and_drop(srv->port(), body, 300);
  ASSERT_GE(got.size(), 300u);
  // The server notices at its next write and cancels: blocks back, one cancelled request.
  json h;
  for (int i = 0; i < 500; ++i) {
    h = health(*srv);
    if (h["kv_blocks_used"] == 0 && h["in_flight"] == 0 && h["requests_cancelled"] == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(h["kv_blocks_used"], 0) << h.dump();
  EXPECT_EQ(h["in_flight"], 0) << h.dump();
  EXPECT_EQ(h["requests_cancelled"], 1) << h.dump();
  EXPECT_EQ(h["client_disconnects"], 1) << h.dump();
  auto met = srv->client()->Get("/metrics");
  ASSERT_TRUE(met);
  EXPECT_NE(met->body.find("tzero_requests_finished_total{reason=\"disconnected\"} 1"),
            std::string::npos)
      << met->body;
  EXPECT_NE(met->body.find("tzero_kv_blocks_used 0"), std::string::npos);
  // And it still serves.
  int st = 0;
  tzero::test::post_json(*srv->client(), "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}},
                         &st);
  EXPECT_EQ(st, 200);
}

TEST(ServeLifecycle, SigtermDuringStreamExitsZero) {
  auto srv = tzero::test::serve_tiny({"--grace", "0.5", "--ctx", "4096"});
  ASSERT_TRUE(srv->ok());
  std::string got;
  std::atomic<bool> started{false};
  std::thread client([&] {
    httplib::Client c("127.0.0.1", srv->port());
    c.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{
        {"prompt", "Long story"},
        {"max_tokens", 4000},
        {"temperature", 0},
        {"ignore_eos", true},
        {"stream",
         true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      got.append(d, n);
      started = true;
      return true;
    };
    c.send(req);
  });
  for (int i = 0; i < 500 && !started; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int code = srv->stop(SIGTERM, 30);
  client.join();
  EXPECT_EQ(code, 0) << srv->stderr_text();
  EXPECT_NE(srv->stderr_text().find("stopped"), std::string::npos) << srv->stderr_text();
  // The stream ended either normally or with the shutdown error event, never mid-JSON.
  const auto data = tzero::test::sse_data(got);
  ASSERT_FALSE(data.empty()) << got;
  const std::string& last = data.back();
  if (last != "[DONE]") {
    EXPECT_NE(last.find("shutting down"), std::string::npos) << last;
  }
}

TEST(ServeLifecycle, OpenAiNpmClient) {
  const std::string dir = std::string(TZ_SOURCE_DIR) + "/tests/openai";
  if (!std::filesystem::exists(dir + "/node_modules/openai/package.json"))
    GTEST_SKIP() << "the openai npm package is not installed in tests/openai/node_modules "
                    "(run `make test-openai`, which needs node and npm)";
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not available";
  auto srv = tzero::test::serve_tiny({"--api-key", "sk-npm", "--ctx", "2048"});
  ASSERT_TRUE(srv->ok());
  const std::string log = tzero::test::scratch_dir() + "/openai_client.log";
  const std::string cmd = "node " + dir +
                          "/openai_client.mjs http://127.0.0.1:" + std::to_string(srv->port()) +
                          "/v1 sk-npm > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << tzero::test::read_file(log);
}

}  // namespace
