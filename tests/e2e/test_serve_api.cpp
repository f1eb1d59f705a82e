// `tzero serve` (the real binary on a loopback port) through its OpenAI API: every endpoint,
// the response shapes, streaming equal to non-streaming bit for bit (text, tokens, logprobs),
// repeated and concurrent requests equal to the solo response, seeds, n, stop strings, usage.
#include <gtest/gtest.h>

#include <thread>

#include "e2e/serve_test_util.h"

using nlohmann::json;
using tzero::test::Gen;

namespace {

TEST(ServeApi, HealthModelsMetrics) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  const json hj = json::parse(h->body);
  EXPECT_EQ(hj["status"], "ok");
  EXPECT_EQ(hj["kv_blocks_used"], 0);
  EXPECT_GT(hj["kv_blocks_total"].get<int>(), 0);
  const std::string fp = hj["system_fingerprint"];
  ASSERT_EQ(fp.rfind("tz-", 0), 0u) << fp;
  // The fingerprint is the one `tzero fingerprint` computes for this model.
  const auto cli =
      tzero::test::run_tzero({"fingerprint", "-m", tzero::test::generated_model("tiny", "q8_0")});
  EXPECT_NE(cli.out.find(fp.substr(3)), std::string::npos) << cli.out;

  auto m = c->Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  const json mj = json::parse(m->body);
  EXPECT_EQ(mj["object"], "list");
  ASSERT_EQ(mj["data"].size(), 1u);
  EXPECT_EQ(mj["data"][0]["object"], "model");
  const std::string id = mj["data"][0]["id"];
  auto one = c->Get(("/v1/models/" + id).c_str());
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  auto none = c->Get("/v1/models/no-such-model");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);

  int st = 0;
  tzero::test::post_json(*c, "/v1/completions", {{"prompt", "hello"}, {"max_tokens", 4}}, &st);
  EXPECT_EQ(st, 200);
  auto met = c->Get("/metrics");
  ASSERT_TRUE(met);
  EXPECT_EQ(met->status, 200);
  EXPECT_NE(met->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  for (const char* name :
       {"tzero_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1",
        "tzero_prompt_tokens_total", "tzero_generated_tokens_total", "tzero_queue_depth 0",
        "tzero_running 0", "tzero_kv_blocks_used 0", "tzero_kv_blocks_total",
        "tzero_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1",
        "tzero_time_per_output_token_seconds_count 1",
        "tzero_requests_finished_total{reason=\"length\"} 1"})
    EXPECT_NE(met->body.find(name), std::string::npos) << name << "\n" << met->body;
}

TEST(ServeApi, CompletionShapeStreamingAndRepeats) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json body = {{"model", "whatever"},
                     {"prompt", "The quick brown fox"},
                     {"max_tokens", 24},
                     {"temperature", 0},
                     {"logprobs", 3}};
  int st = 0;
  const json r = tzero::test::post_json(*c, "/v1/completions", body, &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(r["created"].is_number_integer());
  EXPECT_TRUE(r["model"].is_string());
  const Gen solo = tzero::test::gen_of_response(r);
  EXPECT_EQ(solo.finish, "length");
  EXPECT_EQ(solo.tokens.size(), 24u);
  ASSERT_EQ(solo.top.size(), 24u);
  EXPECT_LE(solo.top[0].size(), 3u);
  EXPECT_EQ(r["choices"][0]["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(r["usage"]["completion_tokens"], 24);
  EXPECT_EQ(r["usage"]["total_tokens"].get<int>(), r["usage"]["prompt_tokens"].get<int>() + 24);
  EXPECT_FALSE(r["usage"].contains("completion_tokens_details")) << r.dump();  // no drafts
  for (double lp : solo.logprobs) EXPECT_LE(lp, 0.0);

  // Repeats: bit for bit.
  for (int i = 0; i < 3; ++i) {
    const json again = tzero::test::post_json(*c, "/v1/completions", body, &st);
    EXPECT_EQ(tzero::test::gen_of_response(again), solo);
    EXPECT_EQ(again["system_fingerprint"], r["system_fingerprint"]);
  }

  // Streaming: the same tokens, text and logprobs; usage chunk when asked.
  json sb = body;
  sb["stream_options"] = {{"include_usage", true}};
  std::string ctype;
  const std::string sse = tzero::test::post_stream(*c, "/v1/completions", sb, &st, &ctype);
  ASSERT_EQ(st, 200);
  EXPECT_NE(ctype.find("text/event-stream"), std::string::npos);
  const Gen streamed = tzero::test::gen_of_stream(sse);
  EXPECT_EQ(streamed, solo) << sse;
  EXPECT_EQ(streamed.usage, r["usage"]);
  EXPECT_EQ(streamed.fingerprint, r["system_fingerprint"]);
  const auto data = tzero::test::sse_data(sse);
  ASSERT_GE(data.size(), 3u);
  const json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "text_completion");
  EXPECT_EQ(first["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  const json usage_chunk = json::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage_chunk["choices"].empty());

  // Token-id prompts are accepted as well.
  const json tok = tzero::test::post_json(
      *c, "/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 3}, {"temperature", 0}}, &st);
  EXPECT_EQ(st, 200) << tok.dump();
  EXPECT_EQ(tok["usage"]["prompt_tokens"], 3);
}

TEST(ServeApi, ChatStreamingMatchesNonStreaming) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json body = {
      {"model", "tiny"},
      {"messages",
       {{{"role", "system"}, {"content", "You are terse."}},
        {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Say something."}}}}}}},
      {"max_completion_tokens", 20},
      {"temperature", 0},
      {"logprobs", true},
      {"top_logprobs", 2}};
  int st = 0;
  const json r = tzero::test::post_json(*c, "/v1/chat/completions", body, &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  const Gen solo = tzero::test::gen_of_response(r);
  ASSERT_FALSE(solo.tokens.empty());
  const json& lp0 = r["choices"][0]["logprobs"]["content"][0];
  EXPECT_TRUE(lp0["bytes"].is_array());
  EXPECT_EQ(lp0["top_logprobs"].size(), 2u);

  const std::string sse = tzero::test::post_stream(*c, "/v1/chat/completions", body, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(tzero::test::gen_of_stream(sse), solo);
  const auto data = tzero::test::sse_data(sse);
  ASSERT_GE(data.size(), 3u);
  const json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const json last = json::parse(data[data.size() - 2]);
  EXPECT_FALSE(last["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_FALSE(first.contains("usage"));  // only with stream_options.include_usage
}

TEST(ServeApi, ConcurrentRequestsEqualSolo) {
  auto srv = tzero::test::serve_tiny({"--parallel", "4", "--max-queue", "16"});
  ASSERT_TRUE(srv->ok());
  const int n = 8;
  std::vector<json> bodies;
  for (int i = 0; i < n; ++i) {
    json b = {{"prompt", "Request number " + std::to_string(i) + (i % 2 ? " is odd" : "")},
              {"max_tokens", 12 + 2 * i},
              {"logprobs", 2},
              {"temperature", i % 3 == 0 ? 0.0 : 0.9},
              {"seed", 1000 + i}};
    if (i % 4 == 1) b["stream"] = true;
    bodies.push_back(b);
  }
  auto run_one = [&](const json& b) {
    auto c = srv->client();
    int st = 0;
    if (b.value("stream", false)) {
      const std::string sse = tzero::test::post_stream(*c, "/v1/completions", b, &st);
      EXPECT_EQ(st, 200);
      return tzero::test::gen_of_stream(sse);
    }
    const json r = tzero::test::post_json(*c, "/v1/completions", b, &st);
    EXPECT_EQ(st, 200) << r.dump();
    return st == 200 ? tzero::test::gen_of_response(r) : Gen{};
  };
  std::vector<Gen> solo;
  for (const json& b : bodies) solo.push_back(run_one(b));
  std::vector<Gen> together(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { together[size_t(i)] = run_one(bodies[size_t(i)]); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i) EXPECT_EQ(together[size_t(i)], solo[size_t(i)]) << "request " << i;
}

TEST(ServeApi, SeedsChoicesAndStops) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json base = {{"prompt", "Sampling"},
                     {"max_tokens", 16},
                     {"temperature", 1.2},
                     {"top_p", 0.95},
                     {"top_k", 40},
                     {"min_p", 0.01},
                     {"seed", 7},
                     {"frequency_penalty", 0.5},
                     {"presence_penalty", 0.25},
                     {"repetition_penalty", 1.1}};
  const json a = tzero::test::post_json(*c, "/v1/completions", base, &st);
  ASSERT_EQ(st, 200) << a.dump();
  const json b = tzero::test::post_json(*c, "/v1/completions", base, &st);
  EXPECT_EQ(a["choices"], b["choices"]);

  // n = 3: choice i is the request with seed 7 + i.
  json nb = base;
  nb["n"] = 3;
  const json three = tzero::test::post_json(*c, "/v1/completions", nb, &st);
  ASSERT_EQ(st, 200) << three.dump();
  ASSERT_EQ(three["choices"].size(), 3u);
  EXPECT_EQ(three["choices"][0]["text"], a["choices"][0]["text"]);
  json s8 = base;
  s8["seed"] = 8;
  const json eight = tzero::test::post_json(*c, "/v1/completions", s8, &st);
  EXPECT_EQ(three["choices"][1]["text"], eight["choices"][0]["text"]);
  EXPECT_EQ(three["choices"][2]["index"], 2);
  EXPECT_EQ(three["usage"]["prompt_tokens"], a["usage"]["prompt_tokens"]);
  // Streamed, n = 3: every choice equals its non-streamed self.
  const std::string sse = tzero::test::post_stream(*c, "/v1/completions", nb, &st);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(tzero::test::gen_of_stream(sse, i), tzero::test::gen_of_response(three, i));

  // A stop string cuts the text before it, finish_reason "stop".
  const json greedy = {{"prompt", "Stop here"}, {"max_tokens", 40}, {"temperature", 0}};
  const json full = tzero::test::post_json(*c, "/v1/completions", greedy, &st);
  const std::string text = full["choices"][0]["text"];
  ASSERT_GE(text.size(), 12u) << text;
  const std::string stop = text.substr(text.size() / 2, 3);
  json sj = greedy;
  sj["stop"] = {stop, "\x01never"};
  const json cut = tzero::test::post_json(*c, "/v1/completions", sj, &st);
  ASSERT_EQ(st, 200) << cut.dump();
  const std::string got = cut["choices"][0]["text"];
  EXPECT_EQ(got, text.substr(0, text.find(stop)));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(
      tzero::test::gen_of_stream(tzero::test::post_stream(*c, "/v1/completions", sj, &st)).text,
      got);
}

// Real text: stories260K through the server equals `tzero run` (greedy).
TEST(ServeApi, Stories260KMatchesRun) {
  TZ_REQUIRE_SHARED(model, "gguf/stories260K.gguf");
  tzero::test::ServeProcess srv({"-m", model, "-t", "2"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  const auto run =
      tzero::test::run_tzero({"run", "-m", model, "-p", "Once upon a time", "-n", "48", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json rj = json::parse(run.out);
  auto c = srv.client();
  int st = 0;
  const json r = tzero::test::post_json(
      *c, "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 48}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], rj["text"]);
  EXPECT_EQ(r["usage"]["completion_tokens"].get<size_t>(), rj["tokens"].size());
}

}  // namespace
