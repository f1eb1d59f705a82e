// Prompt scoring on the real `tzero serve`: /v1/completions with `echo`, `logprobs` and
// `max_tokens: 0` (the request lm-evaluation-harness's local-completions model sends for
// log-likelihood tasks), echo followed by generation, vLLM's `prompt_logprobs`, streaming with
// the prompt first; the same bits alone or batched; bad input a 400 naming the field.
#include <gtest/gtest.h>

#include <thread>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

json complete(httplib::Client& c, const json& body, int* status = nullptr) {
  return tzero::test::post_json(c, "/v1/completions", body, status);
}

const std::string kPrompt = "The quick brown fox jumps over the lazy dog";

json lm_eval_payload(const json& prompt) {
  return {{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0},
          {"temperature", 0}, {"model", "m"}, {"seed", 1234}};
}

// Proves: lm-evaluation-harness's scoring request answers OpenAI's legacy echo shape: the
// prompt as text, one entry per prompt token in tokens, token_logprobs and top_logprobs (the
// first null), text_offset from 0, no completion; a token-id prompt scores the same.
TEST(ServeScore, LmEvalPayloadScoresThePrompt) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json r = complete(*c, lm_eval_payload(kPrompt), &st);
  ASSERT_EQ(st, 200) << r.dump();
  const json& ch = r["choices"][0];
  EXPECT_EQ(ch["text"], kPrompt);
  EXPECT_EQ(ch["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 0);
  const int n = r["usage"]["prompt_tokens"];
  const json& lp = ch["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), size_t(n));
  ASSERT_EQ(lp["token_logprobs"].size(), size_t(n));
  ASSERT_EQ(lp["top_logprobs"].size(), size_t(n));
  ASSERT_EQ(lp["text_offset"].size(), size_t(n));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["text_offset"][0], 0);
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(lp["text_offset"][i], offset) << i;
    offset += lp["tokens"][i].get<std::string>().size();
    if (i == 0) continue;
    const double l = lp["token_logprobs"][i];
    EXPECT_LE(l, 0.0);
    ASSERT_EQ(lp["top_logprobs"][i].size(), 1u);
    EXPECT_GE(lp["top_logprobs"][i].begin().value().get<double>(), l);  // the best is the best
  }
  // lm-eval's max_tokens 1 variant: the prompt's entries, then the generated token's.
  const json t = complete(
      *c,
      {{"prompt", kPrompt}, {"max_tokens", 1}, {"echo", true}, {"logprobs", 1}, {"temperature", 0}},
      &st);
  ASSERT_EQ(st, 200);
  ASSERT_EQ(t["choices"][0]["logprobs"]["tokens"].size(), size_t(n + 1));
  json head = t["choices"][0]["logprobs"]["token_logprobs"];
  head.erase(head.size() - 1);
  EXPECT_EQ(head.dump(), lp["token_logprobs"].dump());
  // lm-eval sends token ids, as a list of one list: the same scores.
  const auto cli = tzero::test::run_tzero(
      {"tokenize", "-m", tzero::test::generated_model("tiny", "q8_0"), "-p", kPrompt, "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json ids = json::parse(cli.out)["ids"];
  ASSERT_EQ(ids.size(), size_t(n));
  const json r2 = complete(*c, lm_eval_payload(json::array({ids})), &st);
  ASSERT_EQ(st, 200) << r2.dump();
  EXPECT_EQ(r2["choices"][0]["logprobs"]["token_logprobs"].dump(), lp["token_logprobs"].dump());
  EXPECT_EQ(r2["choices"][0]["logprobs"]["tokens"].dump(), lp["tokens"].dump());
}

// Proves: echo with max_tokens > 0 echoes the prompt then generates: the text is prompt +
// completion, the logprobs list the prompt's tokens then the generated ones, and the generated
// part is bit for bit the plain (non-echo) response's.
TEST(ServeScore, EchoThenGenerates) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json base = {{"prompt", kPrompt},
                     {"max_tokens", 5},
                     {"temperature", 0},
                     {"logprobs", 2},
                     {"ignore_eos", true}};
  json echo = base;
  echo["echo"] = true;
  int st = 0;
  const json plain = complete(*c, base, &st);
  ASSERT_EQ(st, 200);
  const json e = complete(*c, echo, &st);
  ASSERT_EQ(st, 200) << e.dump();
  const int n = e["usage"]["prompt_tokens"];
  EXPECT_EQ(e["usage"]["completion_tokens"], 5);
  EXPECT_EQ(e["choices"][0]["text"], kPrompt + plain["choices"][0]["text"].get<std::string>());
  const json& lp = e["choices"][0]["logprobs"];
  const json& pl = plain["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), size_t(n + 5));
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(lp["tokens"][size_t(n) + i], pl["tokens"][i]);
    EXPECT_EQ(lp["token_logprobs"][size_t(n) + i].dump(), pl["token_logprobs"][i].dump());
    EXPECT_EQ(lp["top_logprobs"][size_t(n) + i].dump(), pl["top_logprobs"][i].dump());
  }
  // text_offset goes on across the prompt into the completion.
  size_t offset = 0;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += lp["tokens"][i].get<std::string>().size();
  }
  // Echo without logprobs: the text only.
  json bare = echo;
  bare.erase("logprobs");
  const json b = complete(*c, bare, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(b["choices"][0]["text"], e["choices"][0]["text"]);
  EXPECT_TRUE(b["choices"][0]["logprobs"].is_null());
}

// Proves: vLLM's prompt_logprobs: choices[0].prompt_logprobs is [null, {id: {logprob, rank,
// decoded_token}}, ...], each position holding its prompt token (the same logprob as echo's)
// and the top N alternatives ranked 1..N.
TEST(ServeScore, PromptLogprobsInVllmShape) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::vector<int> ids = {1, 72, 101, 108, 108, 111, 44, 32, 119, 111};
  int st = 0;
  const json v = complete(
      *c, {{"prompt", ids}, {"prompt_logprobs", 2}, {"max_tokens", 2}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << v.dump();
  const json e =
      complete(*c, {{"prompt", ids}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}}, &st);
  ASSERT_EQ(st, 200) << e.dump();
  const json& pl = v["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), ids.size());
  EXPECT_TRUE(pl[0].is_null());
  EXPECT_EQ(v["choices"][0]["text"].get<std::string>().empty(), false);  // no echo: completion
  for (size_t i = 1; i < ids.size(); ++i) {
    const json& pos = pl[i];
    ASSERT_TRUE(pos.is_object());
    const std::string key = std::to_string(ids[i]);
    ASSERT_TRUE(pos.contains(key)) << pos.dump();
    EXPECT_EQ(pos[key]["logprob"].dump(), e["choices"][0]["logprobs"]["token_logprobs"][i].dump());
    EXPECT_GE(pos[key]["rank"].get<int>(), 1);
    EXPECT_TRUE(pos[key]["decoded_token"].is_string());
    EXPECT_GE(pos.size(), 2u);
    EXPECT_LE(pos.size(), 3u);
    for (auto it = pos.begin(); it != pos.end(); ++it) {
      if (it.key() != key) {
        EXPECT_LE(it.value()["rank"].get<int>(), 2);
      }
    }
  }
}

// Proves: a scoring request gets the same bits alone and among concurrent generation,
// embedding and other scoring requests (small token budget, so its prompt is chunked).
TEST(ServeScore, SameBitsAloneOrBatched) {
  auto srv =
      tzero::test::serve_tiny({"--parallel", "6", "--batch-tokens", "16", "--block-size", "4"});
  ASSERT_TRUE(srv->ok());
  json req = lm_eval_payload(kPrompt + ", again and again");
  req["logprobs"] = 3;
  req["prompt_logprobs"] = 1;
  int st = 0;
  json solo;
  {
    auto c = srv->client();
    solo = complete(*c, req, &st);
    ASSERT_EQ(st, 200);
  }
  std::vector<json> got(4);
  std::vector<std::thread> ts;
  for (int k = 0; k < 10; ++k)
    ts.emplace_back([&, k] {
      auto c = srv->client();
      if (k < 4) {
        got[size_t(k)] = complete(*c, req);
      } else if (k % 3 == 0) {
        tzero::test::post_stream(
            *c, "/v1/completions",
            {{"prompt", "Once upon"}, {"max_tokens", 20}, {"ignore_eos", true}});
      } else if (k % 3 == 1) {
        tzero::test::post_json(*c, "/v1/embeddings", {{"input", {kPrompt, "the dog", "a"}}});
      } else {
        complete(*c, lm_eval_payload("A different prompt " + std::to_string(k)));
      }
    });
  for (auto& t : ts) t.join();
  for (const json& g : got) {
    ASSERT_TRUE(g.contains("choices")) << g.dump();
    EXPECT_EQ(g["choices"][0]["logprobs"].dump(), solo["choices"][0]["logprobs"].dump());
    EXPECT_EQ(g["choices"][0]["prompt_logprobs"].dump(),
              solo["choices"][0]["prompt_logprobs"].dump());
  }
}

// Proves: streamed with echo, the prompt comes first (one chunk: the prompt text and its
// logprobs), then the generated tokens; together they equal the whole response.
TEST(ServeScore, StreamedEchoSendsThePromptFirst) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json req = {{"prompt", kPrompt},   {"echo", true},     {"logprobs", 1},
                    {"max_tokens", 4},     {"temperature", 0}, {"ignore_eos", true},
                    {"prompt_logprobs", 0}};
  int st = 0;
  const json whole = complete(*c, req, &st);
  ASSERT_EQ(st, 200);
  const std::string body = tzero::test::post_stream(*c, "/v1/completions", req, &st);
  ASSERT_EQ(st, 200);
  const std::vector<std::string> data = tzero::test::sse_data(body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  const json first = json::parse(data[0]);
  const json& c0 = first["choices"][0];
  EXPECT_EQ(c0["text"], kPrompt);
  const int n = whole["usage"]["prompt_tokens"];
  ASSERT_EQ(c0["logprobs"]["tokens"].size(), size_t(n));
  EXPECT_TRUE(c0["logprobs"]["token_logprobs"][0].is_null());
  EXPECT_EQ(c0["prompt_logprobs"].dump(), whole["choices"][0]["prompt_logprobs"].dump());
  std::string text;
  json tokens = json::array(), lps = json::array(), offs = json::array();
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    const json j = json::parse(data[i]);
    for (const json& ch : j["choices"]) {
      text += ch["text"].get<std::string>();
      if (ch["logprobs"].is_null()) continue;
      for (const json& x : ch["logprobs"]["tokens"]) tokens.push_back(x);
      for (const json& x : ch["logprobs"]["token_logprobs"]) lps.push_back(x);
      for (const json& x : ch["logprobs"]["text_offset"]) offs.push_back(x);
    }
  }
  const json& wl = whole["choices"][0]["logprobs"];
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(tokens.dump(), wl["tokens"].dump());
  EXPECT_EQ(lps.dump(), wl["token_logprobs"].dump());
  EXPECT_EQ(offs.dump(), wl["text_offset"].dump());
}

// Proves: bad scoring requests are a 400 naming the field: max_tokens 0 with nothing to score,
// a prompt longer than the context (context_length_exceeded naming the limit; a prompt of
// exactly the context is scored), prompt_logprobs out of range or of the wrong type, a token
// id outside the vocabulary, prompt_logprobs on chat (unknown there).
TEST(ServeScore, BadInputIs400) {
  auto srv = tzero::test::serve_tiny({"--ctx", "64"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::vector<int> too_long(65, 5), fits(64, 5);
  struct Case {
    std::string path;
    json body;
    std::string param, code, needle;
  };
  const std::vector<Case> cases = {
      {"/v1/completions",
       {{"prompt", "x"}, {"max_tokens", 0}, {"echo", true}},
       "max_tokens",
       "invalid_value",
       "score"},
      {"/v1/completions",
       {{"prompt", "x"}, {"max_tokens", -1}, {"echo", true}, {"logprobs", 0}},
       "max_tokens",
       "invalid_value",
       ""},
      {"/v1/completions", lm_eval_payload(too_long), "prompt", "context_length_exceeded",
       "64 tokens"},
      {"/v1/completions", lm_eval_payload(std::string(2000, 'a')), "prompt",
       "context_length_exceeded", "64 tokens"},
      {"/v1/completions",
       {{"prompt", "x"}, {"prompt_logprobs", 21}},
       "prompt_logprobs",
       "invalid_value",
       ""},
      {"/v1/completions",
       {{"prompt", "x"}, {"prompt_logprobs", "2"}},
       "prompt_logprobs",
       "invalid_type",
       ""},
      {"/v1/completions", lm_eval_payload(json::array({1, 2, 700})), "prompt", "invalid_value",
       "vocabulary of 512"},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"prompt_logprobs", 1}},
       "prompt_logprobs",
       "unknown_parameter",
       ""},
      {"/v1/chat/completions",
       {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 0}},
       "max_tokens",
       "invalid_value",
       ""},
  };
  for (const Case& k : cases) {
    int st = 0;
    const json r = tzero::test::post_json(*c, k.path, k.body, &st);
    EXPECT_EQ(st, 400) << k.body.dump() << " -> " << r.dump();
    ASSERT_TRUE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["error"]["param"], k.param) << k.body.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["code"], k.code) << k.body.dump() << " -> " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(k.needle), std::string::npos)
        << r.dump();
  }
  int st = 0;
  const json r = complete(*c, lm_eval_payload(fits), &st);
  EXPECT_EQ(st, 200) << "a prompt of exactly the context is scored: " << r.dump();
  if (st == 200) {
    EXPECT_EQ(r["choices"][0]["logprobs"]["tokens"].size(), 64u);
  }
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["kv_blocks_used"], 0);
}

}  // namespace
