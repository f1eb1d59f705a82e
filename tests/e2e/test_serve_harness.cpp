// Evaluation harnesses, unchanged, against the real `tzero serve`: the exact request shapes of
// lm-evaluation-harness's `local-completions` (log-likelihood: several token-id prompts per
// request with echo, logprobs 1 and max_tokens 1, or the older max_tokens 0 and logprobs 10;
// generate-until: several prompts with stop strings) and `local-chat-completions` (messages
// marked {"type": "text"}), and its remote tokenizer (GET /tokenizer_info, vLLM's /tokenize and
// /detokenize at the server's root). The checks read the fields the harness parses, the way it
// parses them (choices sorted by index, token_logprobs[ctxlen:-1], the greedy test against
// max(top_logprobs)), and every prompt's answer is bit for bit its answer alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

json post(httplib::Client& c, const std::string& path, const json& body, int* status) {
  return tzero::test::post_json(c, path, body, status);
}

json get(httplib::Client& c, const std::string& path, int* status) {
  auto res = c.Get(path);
  *status = res ? res->status : -1;
  return res ? json::parse(res->body) : json();
}

// lm-eval's remote tokenizer: POST /tokenize {"prompt", "add_special_tokens": false}.
std::vector<int> remote_encode(httplib::Client& c, const std::string& text) {
  int st = 0;
  const json r = post(c, "/tokenize", {{"prompt", text}, {"add_special_tokens", false}}, &st);
  EXPECT_EQ(st, 200) << r.dump();
  return r["tokens"].get<std::vector<int>>();
}

// lm-eval's log-likelihood payload (TemplateAPI era: max_tokens 1, logprobs 1).
json loglikelihood_payload(const json& prompts) {
  return {{"model", nullptr}, {"prompt", prompts}, {"temperature", 0}, {"max_tokens", 1},
          {"logprobs", 1},    {"seed", 1234},      {"echo", true}};
}

// What lm-eval's parse_logprobs computes from one choice: the continuation's summed logprob
// (token_logprobs[ctxlen:-1]) and whether every continuation token was the greedy one.
std::pair<double, bool> parse_logprobs(const json& choice, size_t ctxlen) {
  const json& lp = choice["logprobs"];
  double sum = 0;
  bool greedy = true;
  const size_t end = lp["token_logprobs"].size() - 1;
  for (size_t i = ctxlen; i < end; ++i) {
    const double tok = lp["token_logprobs"][i];
    sum += tok;
    double best = -1e30;
    for (const auto& [k, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
    if (tok != best) greedy = false;
  }
  return {sum, greedy};
}

// Proves: the remote tokenizer's three calls answer what it reads: /tokenizer_info has the
// special tokens' texts (eos_token, which its auto-detection requires) and the chat template
// key; /tokenize in vLLM's shape gives the tokens (the EOS text tokenizes to the EOS id, which
// is how the harness finds eos_token_id); /detokenize gives back "prompt".
TEST(ServeHarness, RemoteTokenizerEndpoints) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json info = get(*c, "/tokenizer_info", &st);
  ASSERT_EQ(st, 200) << info.dump();
  ASSERT_TRUE(info["eos_token"].is_string()) << info.dump();
  ASSERT_TRUE(info["bos_token"].is_string()) << info.dump();
  EXPECT_TRUE(info.contains("pad_token"));
  EXPECT_TRUE(info.contains("chat_template"));
  EXPECT_GT(info["model_max_length"].get<int>(), 0);
  const std::vector<int> eos = remote_encode(*c, info["eos_token"]);
  ASSERT_EQ(eos.size(), 1u);
  EXPECT_EQ(eos[0], info["eos_token_id"].get<int>());
  const std::vector<int> bos = remote_encode(*c, info["bos_token"]);
  ASSERT_EQ(bos.size(), 1u);
  EXPECT_EQ(bos[0], info["bos_token_id"].get<int>());

  const std::string text = "The quick brown fox";
  const std::vector<int> ids = remote_encode(*c, text);
  ASSERT_FALSE(ids.empty());
  EXPECT_NE(ids[0], info["bos_token_id"].get<int>()) << "add_special_tokens false adds no BOS";
  const json d = post(*c, "/detokenize", {{"tokens", ids}}, &st);
  ASSERT_EQ(st, 200) << d.dump();
  EXPECT_EQ(d["prompt"], text);
  EXPECT_EQ(d["content"], text);  // llama.cpp's name too
  // vLLM's shape carries its count; with add_special_tokens (vLLM's default) the BOS comes.
  const json v = post(*c, "/tokenize", {{"prompt", text}}, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(v["count"], ids.size() + 1);
  EXPECT_EQ(v["tokens"][0], info["bos_token_id"]);
  // Mixing the two shapes is a 400 naming the field.
  const json bad = post(*c, "/tokenize", {{"prompt", text}, {"add_special", true}}, &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(bad["error"]["param"], "add_special");
}

// Proves: a log-likelihood batch (several token-id prompts, echo, logprobs 1, max_tokens 1)
// gets one choice per prompt, index = its place in the batch, each with every prompt token's
// entry plus the generated one's; each choice is bit for bit the same prompt's answer alone,
// so what the harness sums does not depend on the batch; usage counts every prompt.
TEST(ServeHarness, LogLikelihoodBatchIsEachPromptAlone) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::vector<std::vector<int>> prompts = {
      remote_encode(*c, "The capital of France is Paris"),
      remote_encode(*c, "Once upon a time there was a dragon who"), remote_encode(*c, "2 + 2 = 4"),
      remote_encode(*c, "The capital of France is Rome")};
  const std::vector<size_t> ctxlens = {5, 6, 3, 5};
  int st = 0;
  const json batch = post(*c, "/v1/completions", loglikelihood_payload(prompts), &st);
  ASSERT_EQ(st, 200) << batch.dump();
  ASSERT_EQ(batch["choices"].size(), prompts.size());
  int n_prompt = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json& ch = batch["choices"][i];
    EXPECT_EQ(ch["index"], i);
    ASSERT_EQ(ch["logprobs"]["token_logprobs"].size(), prompts[i].size() + 1) << i;
    EXPECT_TRUE(ch["logprobs"]["token_logprobs"][0].is_null());
    const json alone = post(*c, "/v1/completions", loglikelihood_payload({prompts[i]}), &st);
    ASSERT_EQ(st, 200);
    EXPECT_EQ(ch["logprobs"].dump(), alone["choices"][0]["logprobs"].dump()) << i;
    EXPECT_EQ(ch["tzero"]["logits_digest"], alone["choices"][0]["tzero"]["logits_digest"]);
    const auto [sum, greedy] = parse_logprobs(ch, ctxlens[i]);
    EXPECT_LT(sum, 0.0);
    (void)greedy;
    n_prompt += int(prompts[i].size());
  }
  EXPECT_EQ(batch["usage"]["prompt_tokens"], n_prompt);
  EXPECT_EQ(batch["usage"]["completion_tokens"], int(prompts.size()));

  // The older harness: max_tokens 0, logprobs 10, through the openai client (token_logprobs
  // [ctxlen:]): the prompt's entries only, the same numbers.
  json old = loglikelihood_payload(prompts);
  old["max_tokens"] = 0;
  old["logprobs"] = 10;
  const json o = post(*c, "/v1/completions", old, &st);
  ASSERT_EQ(st, 200) << o.dump();
  ASSERT_EQ(o["choices"].size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json& a = o["choices"][i]["logprobs"]["token_logprobs"];
    const json& b = batch["choices"][i]["logprobs"]["token_logprobs"];
    ASSERT_EQ(a.size(), prompts[i].size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].dump(), b[k].dump()) << i << " " << k;
    EXPECT_EQ(o["choices"][i]["logprobs"]["top_logprobs"][1].size(), 10u);
  }
}

// Proves: generate-until (several prompts, token ids or strings, a stop list with the EOS
// text, seed, temperature 0) answers choices[index].text, each the prompt's answer alone.
TEST(ServeHarness, GenerateUntilBatch) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json info = get(*c, "/tokenizer_info", &st);
  const std::vector<std::string> texts = {"Question: what is the sky?\nAnswer:", "Once upon",
                                          "A list of colours:"};
  json ids = json::array();
  for (const std::string& t : texts) ids.push_back(remote_encode(*c, t));
  for (const json& prompt : {ids, json(texts)}) {
    const json payload = {{"prompt", prompt},
                          {"model", "tiny"},
                          {"max_tokens", 12},
                          {"temperature", 0},
                          {"stop", {"\n\n", info["eos_token"]}},
                          {"seed", 1234}};
    const json r = post(*c, "/v1/completions", payload, &st);
    ASSERT_EQ(st, 200) << r.dump();
    ASSERT_EQ(r["choices"].size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      json one = payload;
      one["prompt"] = prompt[i];
      const json alone = post(*c, "/v1/completions", one, &st);
      ASSERT_EQ(st, 200);
      EXPECT_EQ(r["choices"][i]["index"], i);
      EXPECT_EQ(r["choices"][i]["text"], alone["choices"][0]["text"]) << i;
      EXPECT_EQ(r["choices"][i]["tzero"].dump(), alone["choices"][0]["tzero"].dump()) << i;
    }
  }
}

// Proves: with several prompts and n > 1, choice p * n + j is prompt p's j-th, sampled with
// seed + j (so each prompt's choices are those of the prompt alone), streamed or not.
TEST(ServeHarness, SeveralPromptsWithSeveralChoices) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json payload = {{"prompt", {"Once upon a time", "The sky is"}},
                        {"max_tokens", 6},
                        {"temperature", 0.9},
                        {"n", 2},
                        {"seed", 7}};
  int st = 0;
  const json r = post(*c, "/v1/completions", payload, &st);
  ASSERT_EQ(st, 200) << r.dump();
  ASSERT_EQ(r["choices"].size(), 4u);
  for (int p = 0; p < 2; ++p) {
    json one = payload;
    one["prompt"] = payload["prompt"][size_t(p)];
    const json alone = post(*c, "/v1/completions", one, &st);
    for (int j = 0; j < 2; ++j) {
      const json& ch = r["choices"][size_t(p * 2 + j)];
      EXPECT_EQ(ch["index"], p * 2 + j);
      EXPECT_EQ(ch["tzero"]["seed"], 7 + j);
      EXPECT_EQ(ch["tzero"].dump(), alone["choices"][size_t(j)]["tzero"].dump()) << p << j;
    }
  }
  json streamed = payload;
  streamed["stream"] = true;
  const std::string body = tzero::test::post_stream(*c, "/v1/completions", streamed, &st);
  ASSERT_EQ(st, 200);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(tzero::test::gen_of_stream(body, i).text, r["choices"][i]["text"]) << i;
}

// Proves: local-chat-completions' request (messages with "type": "text", stop, seed) is
// answered in choices[0].message.content.
TEST(ServeHarness, ChatCompletionsShape) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  const json r = post(*c, "/v1/chat/completions",
                      {{"messages", {{{"role", "user"}, {"content", "Hi"}, {"type", "text"}}}},
                       {"model", "tiny"},
                       {"max_tokens", 8},
                       {"temperature", 0},
                       {"stop", {"\n\n"}},
                       {"seed", 1234}},
                      &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_TRUE(r["choices"][0]["message"]["content"].is_string());
  const json bad = post(
      *c, "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", "Hi"}, {"type", "image"}}}}, {"max_tokens", 2}},
      &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(bad["error"]["param"], "messages[0].type");
}

// Proves: a bad prompt in a batch is a 400 naming which, and nothing of the batch runs.
TEST(ServeHarness, BadPromptInABatchIsNamed) {
  auto srv = tzero::test::serve_tiny({"-c", "64"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  std::vector<int> long_prompt(80, 5);
  json r = post(*c, "/v1/completions", loglikelihood_payload({{1, 2, 3}, long_prompt}), &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["code"], "context_length_exceeded");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("prompt[1]"), std::string::npos)
      << r.dump();
  r = post(*c, "/v1/completions", loglikelihood_payload({{1, 2, 3}, 5}), &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["param"], "prompt");
  r = post(*c, "/v1/completions", loglikelihood_payload({{1, 2, 3}, {1, 999999}}), &st);
  EXPECT_EQ(st, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("prompt[1]"), std::string::npos);
  r = post(*c, "/v1/completions",
           {{"prompt", {"a", "b"}}, {"max_tokens", 2}, {"tzero_resume", {{"tokens", {1}}}}}, &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["param"], "tzero_resume");
}

}  // namespace
