// `tzero serve` refusing what it must refuse, with OpenAI error objects: malformed JSON, wrong
// types, missing and unknown fields, values out of range, prompts beyond the context (400);
// a missing or wrong API key (401); unknown routes (404); wrong methods (405); bodies over the
// limit (413); a full queue (429 with Retry-After, and nothing else going wrong).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "e2e/serve_test_util.h"
#include "server/api_error.h"
#include "server/http_server.h"

using nlohmann::json;

namespace {

const char* kKey = "sk-test-key";
const httplib::Headers kAuth = {{"Authorization", std::string("Bearer ") + kKey}};

// The body is an OpenAI error object of this status' type; returns it.
json expect_error(const httplib::Result& res, int status, const std::string& what) {
  EXPECT_TRUE(res) << what;
  if (!res) return json();
  EXPECT_EQ(res->status, status) << what << ": " << res->body;
  const json j = json::parse(res->body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << what << ": " << res->body;
  if (!j.is_object() || !j.contains("error")) return json();
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
  EXPECT_TRUE(e["type"].is_string()) << what;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << what;
  if (status == 400) {
    EXPECT_EQ(e["type"], "invalid_request_error") << what;
  }
  return e;
}

TEST(ServeErrors, BadInputIs400) {
  auto srv = tzero::test::serve_tiny({"--api-key", kKey, "--ctx", "64"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::string long_prompt(2000, 'a');
  // (path, body, expected param or "" for null)
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"/v1/completions", "{not json", ""},
      {"/v1/completions", "[1, 2]", ""},
      {"/v1/completions", R"({"max_tokens": 3})", "prompt"},
      {"/v1/completions", R"({"prompt": 5})", "prompt"},
      {"/v1/completions", R"({"prompt": ["a", 5]})", "prompt"},  // a list mixing prompts and ids
      {"/v1/completions", R"({"prompt": "x", "model": 3})", "model"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": "3"})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": 100000})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "temperature": 2.5})", "temperature"},
      {"/v1/completions", R"({"prompt": "x", "temperature": -0.1})", "temperature"},
      {"/v1/completions", R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {"/v1/completions", R"({"prompt": "x", "top_p": 0})", "top_p"},
      {"/v1/completions", R"({"prompt": "x", "top_p": 1.5})", "top_p"},
      {"/v1/completions", R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {"/v1/completions", R"({"prompt": "x", "stream": "yes"})", "stream"},
      {"/v1/completions", R"({"prompt": "x", "stop": ["a","b","c","d","e"]})", "stop"},
      {"/v1/completions", R"({"prompt": "x", "stop": 3})", "stop"},
      {"/v1/completions", R"({"prompt": "x", "n": 0})", "n"},
      {"/v1/completions", R"({"prompt": "x", "frequency_penalty": 3})", "frequency_penalty"},
      {"/v1/completions", R"({"prompt": "x", "top_k": -2})", "top_k"},
      {"/v1/completions", R"({"prompt": "x", "echo": "yes"})", "echo"},
      {"/v1/completions", R"({"prompt": "x", "stream_options": {"include_usage": true}})",
       "stream_options"},
      {"/v1/completions", R"({"prompt": "x", "frobnicate": 1})", "frobnicate"},
      {"/v1/completions", R"({"prompt": "x", "messages": []})", "messages"},
      {"/v1/completions", R"({"prompt": [1, 99999999]})", "prompt"},
      {"/v1/completions", "{\"prompt\": \"" + long_prompt + "\"}", "prompt"},
      {"/v1/chat/completions", R"({"prompt": "x"})", "prompt"},
      {"/v1/chat/completions", R"({"model": "m"})", "messages"},
      {"/v1/chat/completions", R"({"messages": "hi"})", "messages"},
      {"/v1/chat/completions", R"({"messages": []})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {"/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "x"}]})",
       "messages[0].role"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 5}]})",
       "messages[0].content"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 100000})",
       "max_tokens"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools[0]"},
  };
  for (const auto& [path, body, param] : cases) {
    const std::string what = path + " " + body.substr(0, 120);
    const json e = expect_error(c->Post(path.c_str(), kAuth, body, "application/json"), 400, what);
    if (e.is_null()) continue;
    if (param.empty())
      EXPECT_TRUE(e["param"].is_null()) << what;
    else
      EXPECT_EQ(e["param"], param) << what;
  }
  // The prompt beyond the context says so.
  const json e = expect_error(
      c->Post("/v1/completions", kAuth, json{{"prompt", long_prompt}}.dump(), "application/json"),
      400, "long prompt");
  EXPECT_EQ(e["code"], "context_length_exceeded");
  // The largest max_tokens: the sum in the message must not overflow (it once printed a
  // negative count, and UBSan aborted).
  const json big =
      expect_error(c->Post("/v1/completions", kAuth, R"({"prompt": "x", "max_tokens": 2147483647})",
                           "application/json"),
                   400, "max_tokens 2^31-1");
  EXPECT_EQ(big["code"], "context_length_exceeded");
  EXPECT_NE(big["message"].get<std::string>().find("you requested 21474836"), std::string::npos)
      << big.dump();
  // Known harmless fields are accepted.
  auto ok = c->Post("/v1/completions", kAuth,
                    R"({"prompt": "x", "max_tokens": 2, "user": "u1", "logit_bias": {},
                        "best_of": 1, "suffix": null, "seed": null})",
                    "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // Nothing leaked, nothing crashed.
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
}

TEST(ServeErrors, AuthRoutesMethodsAndBodyLimit) {
  auto srv = tzero::test::serve_tiny({"--api-key", kKey, "--max-body-kib", "4"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  // 401 without or with a wrong key; /health stays open.
  expect_error(c->Post("/v1/completions", body, "application/json"), 401, "no key");
  expect_error(
      c->Post("/v1/completions", {{"Authorization", "Bearer nope"}}, body, "application/json"), 401,
      "wrong key");
  expect_error(c->Get("/v1/models"), 401, "models without key");
  expect_error(c->Get("/metrics"), 401, "metrics without key");
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto good = c->Post("/v1/completions", kAuth, body, "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  // 404 and 405.
  expect_error(c->Get("/v1/nothing", kAuth), 404, "unknown route");
  expect_error(c->Post("/nothing", kAuth, body, "application/json"), 404, "unknown POST route");
  auto m = c->Get("/v1/completions", kAuth);
  expect_error(m, 405, "GET completions");
  if (m) {
    EXPECT_EQ(m->get_header_value("Allow"), "POST");
  }
  expect_error(c->Post("/v1/models", kAuth, body, "application/json"), 405, "POST models");
  expect_error(c->Delete("/v1/chat/completions", kAuth), 405, "DELETE chat");
  expect_error(c->Put("/health"), 405, "PUT health without a body");
  // 413 beyond --max-body-kib.
  const std::string big = "{\"prompt\": \"" + std::string(8 * 1024, 'a') + "\"}";
  expect_error(c->Post("/v1/completions", kAuth, big, "application/json"), 413, "big body");
}

TEST(ServeErrors, FullQueueIs429WithRetryAfter) {
  auto srv = tzero::test::serve_tiny({"--parallel", "1", "--max-queue", "1"});
  ASSERT_TRUE(srv->ok());
  const int n = 12;
  std::vector<int> status(n, 0);
  std::vector<std::string> retry_after(n), bodies(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto c = srv->client();
      auto res = c->Post("/v1/completions",
                         json{{"prompt", "load " + std::to_string(i)},
                              {"max_tokens", 48},
                              {"temperature", 0},
                              {"ignore_eos", true}}
                             .dump(),
                         "application/json");
      if (!res) return;
      status[size_t(i)] = res->status;
      retry_after[size_t(i)] = res->get_header_value("Retry-After");
      bodies[size_t(i)] = res->body;
    });
  for (auto& t : threads) t.join();
  int n429 = 0, n200 = 0;
  for (int i = 0; i < n; ++i) {
    if (status[size_t(i)] == 429) {
      ++n429;
      EXPECT_FALSE(retry_after[size_t(i)].empty());
      EXPECT_EQ(json::parse(bodies[size_t(i)])["error"]["type"], "rate_limit_error");
    } else {
      EXPECT_EQ(status[size_t(i)], 200) << bodies[size_t(i)];
      ++n200;
    }
  }
  EXPECT_GT(n429, 0);
  EXPECT_GE(n200, 2);
  auto h = srv->client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
}

}  // namespace

// Proves: bodies with a Content-Encoding are refused before they are read (415), so a small
// gzip body cannot inflate past the size limit; n beyond the queue is the client's error (400
// on n), not a busy server (429); an unknown --chat-template stops the server at startup.
TEST(ServeErrors, CompressedBodiesHugeNAndBadTemplate) {
  auto srv = tzero::test::serve_tiny({"--max-queue", "4"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::string body = R"({"prompt":"hi","max_tokens":1})";
  auto r = c->Post("/v1/completions", {{"Content-Encoding", "gzip"}}, body, "application/json");
  expect_error(r, 415, "gzip body");
  int st = 0;
  const json e = tzero::test::post_json(*c, "/v1/completions",
                                        {{"prompt", "hi"}, {"max_tokens", 1}, {"n", 5}}, &st);
  EXPECT_EQ(st, 400) << e.dump();
  EXPECT_EQ(e["error"]["param"], "n") << e.dump();
  tzero::test::post_json(*c, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 1}, {"n", 4}},
                         &st);
  EXPECT_EQ(st, 200);

  tzero::test::ServeProcess bad(
      {"-m", tzero::test::generated_model("tiny", "q8_0"), "--chat-template", "no-such-format"},
      30);
  EXPECT_FALSE(bad.ok()) << "started with an unknown chat template";
  EXPECT_NE(bad.stderr_text().find("no-such-format"), std::string::npos) << bad.stderr_text();
}

// Proves: a second server cannot bind a port another one listens on (no SO_REUSEPORT: the two
// would silently share the connections).
TEST(ServeErrors, PortInUseIsRefused) {
  tzero::EngineOptions eo;
  eo.model_path = tzero::test::generated_model("tiny", "q8_0");
  eo.n_ctx = 64;
  tzero::Engine engine(eo);
  tzero::server::ServerOptions so;
  so.port = 0;
  tzero::server::HttpServer first(engine, so);
  so.port = first.start();
  tzero::server::HttpServer second(engine, so);
  try {
    second.start();
    ADD_FAILURE() << "a second server bound port " << so.port;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen"), std::string::npos) << e.what();
  }
}

// Proves: the Authorization scheme is case-insensitive (RFC 7235) but the key is compared
// exactly.
TEST(ServeErrors, BearerSchemeIsCaseInsensitive) {
  auto srv = tzero::test::serve_tiny({"--api-key", kKey});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER "}) {
    auto r = c->Get("/v1/models", {{"Authorization", std::string(scheme) + kKey}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << scheme;
  }
  for (const std::string& bad :
       {std::string("Bearer  ") + kKey, std::string("Bearer ") + kKey + "x",
        std::string("Basic ") + kKey}) {
    auto r = c->Get("/v1/models", {{"Authorization", bad}});
    expect_error(r, 401, bad);
  }
}

// Proves: what the engine refuses reaches the client as OpenAI's error object by the error's
// kind and parameter (server/api_error.h), not by its message: a request the KV pool can never
// hold is context_length_exceeded on prompt; a parameter out of range is invalid_value on it.
TEST(ServeErrors, EngineRefusalsMapByKind) {
  auto srv = tzero::test::serve_tiny({"--kv-tokens", "32", "--block-size", "16"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json e =
      tzero::test::post_json(*c, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 100}}, &st);
  EXPECT_EQ(st, 400) << e.dump();
  EXPECT_EQ(e["error"]["param"], "prompt") << e.dump();
  EXPECT_EQ(e["error"]["code"], "context_length_exceeded") << e.dump();
  EXPECT_NE(e["error"]["message"].get<std::string>().find("KV positions"), std::string::npos);

  const tzero::server::ApiError bad = tzero::server::api_error_of(tzero::RequestError(
      tzero::RequestErrorKind::invalid_value, "top_p", "top_p must be in (0, 1]"));
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.param, "top_p");
  EXPECT_EQ(bad.code, "invalid_value");
  const tzero::server::ApiError none = tzero::server::api_error_of(
      tzero::RequestError(tzero::RequestErrorKind::empty_prompt, "", "the prompt is empty"));
  EXPECT_TRUE(none.to_json()["error"]["param"].is_null());
}
