// `tzero serve` for llama.cpp and vLLM clients: POST /tokenize and /detokenize in llama.cpp's
// shape, their extension fields in /v1/completions and /v1/chat/completions (the same answer as
// the OpenAI spelling, bit for bit), and the access log on stderr (docs/SERVER.md).
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "e2e/serve_test_util.h"

using nlohmann::json;
using tzero::test::Gen;

namespace {

const char* kKey = "eco-key";
const httplib::Headers kAuth = {{"Authorization", std::string("Bearer ") + kKey}};

json post(httplib::Client& c, const std::string& path, const json& body, int* status) {
  return tzero::test::post_json(c, path, body, status, kAuth);
}

// The error object of a 400 (and its param), or null when the answer was not one.
json error_400(httplib::Client& c, const std::string& path, const std::string& body) {
  auto res = c.Post(path.c_str(), kAuth, body, "application/json");
  EXPECT_TRUE(res) << body;
  if (!res) return json();
  EXPECT_EQ(res->status, 400) << body << ": " << res->body;
  const json j = json::parse(res->body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"] : json();
}

TEST(ServeEcosystem, TokenizeAndDetokenize) {
  auto srv = tzero::test::serve_tiny({"--api-key", kKey});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  // The API key rule of every route but /health.
  auto no_key = c->Post("/tokenize", R"({"content": "hi"})", "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(c->Post("/detokenize", R"({"tokens": [1]})", "application/json")->status, 401);

  int st = 0;
  const std::string text = "Hello world, a fine day.";
  const json plain = post(*c, "/tokenize", {{"content", text}}, &st);
  ASSERT_EQ(st, 200) << plain.dump();
  ASSERT_TRUE(plain["tokens"].is_array());
  ASSERT_FALSE(plain["tokens"].empty());
  for (const json& t : plain["tokens"]) EXPECT_TRUE(t.is_number_integer());
  // add_special (default false): the BOS the vocabulary asks for, first.
  const json special = post(*c, "/tokenize", {{"content", text}, {"add_special", true}}, &st);
  ASSERT_EQ(st, 200);
  ASSERT_EQ(special["tokens"].size(), plain["tokens"].size() + 1);
  const int bos = special["tokens"][0];
  EXPECT_NE(plain["tokens"][0], bos);

  // {add_special: true, parse_special: false} is the prompt /v1/completions makes of the text:
  // the same answer from the token ids as from the string.
  const json prompt_tokens =
      post(*c, "/tokenize", {{"content", text}, {"add_special", true}, {"parse_special", false}},
           &st)["tokens"];
  const json by_text =
      post(*c, "/v1/completions", {{"prompt", text}, {"max_tokens", 4}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << by_text.dump();
  const json by_ids = post(*c, "/v1/completions",
                           {{"prompt", prompt_tokens}, {"max_tokens", 4}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200) << by_ids.dump();
  EXPECT_EQ(by_text["usage"]["prompt_tokens"], prompt_tokens.size());
  EXPECT_EQ(by_ids["choices"][0]["tzero"]["logits_digest"],
            by_text["choices"][0]["tzero"]["logits_digest"]);

  // parse_special (default true): the BOS text is the BOS token.
  EXPECT_EQ(post(*c, "/tokenize", {{"content", "<s>hi"}}, &st)["tokens"][0], bos);
  EXPECT_NE(
      post(*c, "/tokenize", {{"content", "<s>hi"}, {"parse_special", false}}, &st)["tokens"][0],
      bos);

  // with_pieces: {id, piece}, the piece a string, or its bytes when it is not valid UTF-8 (the
  // tiny vocabulary spells U+00E1 as two byte-fallback tokens, as stories260K does).
  const json pieces =
      post(*c, "/tokenize", {{"content", text + " \xc3\xa1"}, {"with_pieces", true}}, &st);
  ASSERT_EQ(st, 200) << pieces.dump();
  const json& pt = pieces["tokens"];
  ASSERT_GE(pt.size(), plain["tokens"].size() + 2);
  for (size_t i = 0; i < plain["tokens"].size(); ++i) {
    EXPECT_EQ(pt[i]["id"], plain["tokens"][i]);
    EXPECT_TRUE(pt[i]["piece"].is_string()) << pt[i].dump();
  }
  EXPECT_EQ(pt[pt.size() - 2]["piece"], json::array({0xc3}));
  EXPECT_EQ(pt[pt.size() - 1]["piece"], json::array({0xa1}));

  // /detokenize: the text back (the tokenizer's space prefix dropped), control tokens by name.
  const json back = post(*c, "/detokenize", {{"tokens", plain["tokens"]}}, &st);
  ASSERT_EQ(st, 200) << back.dump();
  EXPECT_EQ(back["content"], text);
  EXPECT_EQ(post(*c, "/detokenize", {{"tokens", special["tokens"]}}, &st)["content"], "<s>" + text);
  EXPECT_EQ(post(*c, "/detokenize", {{"tokens", json::array()}}, &st)["content"], "");

  // Errors name the field.
  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"/tokenize", "{}", "content"},
      {"/tokenize", R"({"content": 5})", "content"},
      {"/tokenize", R"({"content": "x", "with_pieces": "yes"})", "with_pieces"},
      {"/tokenize", R"({"content": "x", "add_special": 1})", "add_special"},
      {"/tokenize", R"({"content": "x", "frobnicate": true})", "frobnicate"},
      {"/detokenize", "{}", "tokens"},
      {"/detokenize", R"({"tokens": "1 2"})", "tokens"},
      {"/detokenize", R"({"tokens": [1, 512]})", "tokens"},
      {"/detokenize", R"({"tokens": [-1]})", "tokens"},
      {"/detokenize", R"({"tokens": [1.5]})", "tokens"},
      {"/detokenize", R"({"tokens": [18446744073709551615]})", "tokens"},
  };
  for (const auto& [path, body, param] : bad) {
    const json e = error_400(*c, path, body);
    EXPECT_EQ(e["param"], param) << path << " " << body << ": " << e.dump();
  }
  EXPECT_NE(
      error_400(*c, "/detokenize", R"({"tokens": [1, 512]})")["message"].get<std::string>().find(
          "outside the vocabulary of 512"),
      std::string::npos);
  EXPECT_EQ(error_400(*c, "/tokenize", "{oops")["code"], "invalid_json");
  // JSON only, POST only.
  EXPECT_EQ(c->Post("/tokenize", kAuth, R"({"content": "x"})", "text/plain")->status, 415);
  EXPECT_EQ(c->Get("/tokenize", kAuth)->status, 405);
  // `model` is accepted, as in /v1.
  EXPECT_EQ(post(*c, "/tokenize", {{"content", "x"}, {"model", "m"}}, &st),
            post(*c, "/tokenize", {{"content", "x"}}, &st));
}

TEST(ServeEcosystem, ExtensionFieldsGiveTheOpenAiAnswer) {
  auto srv = tzero::test::serve_tiny({"--api-key", kKey, "--ctx", "128"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = path == "/v1/chat/completions";
    json base = {{"temperature", 0.8}, {"seed", 7}};
    if (chat)
      base["messages"] = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});
    else
      base["prompt"] = "Tell me a story";
    json openai = base, llama = base;
    openai["max_tokens"] = 6;
    openai["repetition_penalty"] = 1.3;
    if (chat) {
      openai["logprobs"] = true;
      openai["top_logprobs"] = 2;
    } else {
      openai["logprobs"] = 2;
    }
    llama["n_predict"] = 6;
    llama["repeat_penalty"] = 1.3;
    llama["n_probs"] = 2;
    // Ignored and default-only fields change nothing.
    const json extras = {{"cache_prompt", true},
                         {"id_slot", 2},
                         {"n_keep", 4},
                         {"samplers", {"top_k", "top_p", "temperature"}},
                         {"typical_p", 1.0},
                         {"mirostat", 0},
                         {"tfs_z", 1.0},
                         {"min_tokens", 0},
                         {"skip_special_tokens", true},
                         {"use_beam_search", false},
                         {"length_penalty", 1.0}};
    for (const auto& [k, v] : extras.items()) llama[k] = v;
    const json a = post(*c, path, openai, &st);
    ASSERT_EQ(st, 200) << a.dump();
    const json b = post(*c, path, llama, &st);
    ASSERT_EQ(st, 200) << b.dump();
    const Gen ga = tzero::test::gen_of_response(a), gb = tzero::test::gen_of_response(b);
    EXPECT_EQ(gb, ga) << path;
    EXPECT_EQ(ga.tokens.size(), 6u);
    ASSERT_FALSE(ga.top.empty());
    EXPECT_EQ(ga.top[0].size(), 2u);
    EXPECT_EQ(b["choices"][0]["tzero"], a["choices"][0]["tzero"]) << path;
    // repeat_last_n 0 turns the penalty off: the unpenalized answer.
    json off = base, zero = base;
    off["max_tokens"] = zero["max_tokens"] = 6;
    zero["repeat_penalty"] = 3.0;
    zero["repeat_last_n"] = 0;
    EXPECT_EQ(post(*c, path, zero, &st)["choices"][0]["tzero"],
              post(*c, path, off, &st)["choices"][0]["tzero"])
        << path;
  }

  // n_predict -1: until the context (128) is full.
  const json all =
      post(*c, "/v1/completions",
           {{"prompt", "Once"}, {"n_predict", -1}, {"temperature", 0}, {"ignore_eos", true}}, &st);
  ASSERT_EQ(st, 200) << all.dump();
  EXPECT_EQ(all["usage"]["total_tokens"], 128);
  EXPECT_EQ(all["choices"][0]["finish_reason"], "length");

  // stop_token_ids: the answer ends at the first of them (the token kept out of the text).
  const auto run =
      tzero::test::run_tzero({"run", "-m", tzero::test::generated_model("tiny", "q8_0"), "-p",
                              "Once upon", "-n", "12", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const json rj = json::parse(run.out);
  ASSERT_EQ(rj["tokens"].size(), 12u) << run.out;
  const int32_t stop_at = rj["tokens"][6];
  size_t first = 0;
  while (rj["tokens"][first] != stop_at) ++first;
  const json cut = post(*c, "/v1/completions",
                        {{"prompt", "Once upon"},
                         {"max_tokens", 12},
                         {"temperature", 0},
                         {"stop_token_ids", {stop_at}}},
                        &st);
  ASSERT_EQ(st, 200) << cut.dump();
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut["choices"][0]["tzero"]["stop_reason"], "stop_token");
  EXPECT_EQ(cut["usage"]["completion_tokens"], first + 1);
  const std::string full = rj["text"], part = cut["choices"][0]["text"];
  EXPECT_EQ(full.rfind(part, 0), 0u) << part << " | " << full;
  EXPECT_EQ(
      error_400(*c, "/v1/completions", R"({"prompt": "x", "stop_token_ids": [512]})")["param"],
      "stop_token_ids");
  // Still refused: what tzero does not do.
  EXPECT_EQ(error_400(*c, "/v1/completions", R"({"prompt": "x", "mirostat": 2})")["param"],
            "mirostat");
  EXPECT_EQ(
      error_400(*c, "/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "x"}], "typical_p": 0.5})")["param"],
      "typical_p");
}

// Waits up to 10 s for stderr to match `re`.
bool stderr_matches(const tzero::test::ServeProcess& srv, const std::regex& re) {
  for (int i = 0; i < 200; ++i) {
    if (std::regex_search(srv.stderr_text(), re)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(ServeEcosystem, AccessLogLinePerRequest) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  ASSERT_EQ(c->Get("/health")->status, 200);
  int st = 0;
  const json r = tzero::test::post_json(
      *c, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0}}, &st);
  ASSERT_EQ(st, 200);
  const std::string sse =
      tzero::test::post_stream(*c, "/v1/chat/completions",
                               {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                                {"max_tokens", 3},
                                {"temperature", 0}},
                               &st);
  ASSERT_EQ(st, 200);
  tzero::test::post_json(*c, "/v1/completions", {{"prompt", "x"}, {"top_k", "many"}}, &st);
  EXPECT_EQ(st, 400);
  EXPECT_EQ(c->Get("/nowhere%0a")->status, 404);
  tzero::test::post_json(*c, "/v1/embeddings", {{"input", "hello there"}}, &st);
  ASSERT_EQ(st, 200);

  const std::string p = std::to_string(r["usage"]["prompt_tokens"].get<int>());
  EXPECT_TRUE(stderr_matches(*srv, std::regex("\nGET /health 200 [0-9]+ms\n")))
      << srv->stderr_text();
  EXPECT_TRUE(stderr_matches(
      *srv, std::regex("\nPOST /v1/completions 200 prompt=" + p + " completion=4 [0-9]+ms\n")))
      << srv->stderr_text();
  // A stream logs when it ends, with its tokens.
  EXPECT_TRUE(stderr_matches(
      *srv, std::regex("\nPOST /v1/chat/completions 200 prompt=[0-9]+ completion=3 [0-9]+ms\n")))
      << srv->stderr_text();
  EXPECT_TRUE(stderr_matches(*srv, std::regex("\nPOST /v1/completions 400 [0-9]+ms\n")))
      << srv->stderr_text();
  // Embeddings: the method, and the time the request took (under 10 s, not the clock's epoch).
  EXPECT_TRUE(stderr_matches(
      *srv, std::regex("\nPOST /v1/embeddings 200 prompt=[0-9]+ completion=0 [0-9]{1,4}ms\n")))
      << srv->stderr_text();
  // A percent-decoded path cannot break the line.
  EXPECT_TRUE(stderr_matches(*srv, std::regex("\nGET /nowhere\\\\x0a 404 [0-9]+ms\n")))
      << srv->stderr_text();
  // The lines follow the start-up lines scripts read.
  const std::string err = srv->stderr_text();
  EXPECT_LT(err.find("listening on http://"), err.find("GET /health"));
  EXPECT_EQ(srv->stop(SIGTERM), 0);
}

TEST(ServeEcosystem, NoAccessLog) {
  auto srv = tzero::test::serve_tiny({"--no-access-log"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  ASSERT_EQ(c->Get("/health")->status, 200);
  int st = 0;
  tzero::test::post_json(*c, "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 2}}, &st);
  ASSERT_EQ(st, 200);
  EXPECT_EQ(srv->stop(SIGTERM), 0);
  const std::string err = srv->stderr_text();
  EXPECT_NE(err.find("listening on http://"), std::string::npos);
  EXPECT_EQ(err.find("GET /health"), std::string::npos) << err;
  EXPECT_EQ(err.find("POST /v1/completions"), std::string::npos) << err;
}

}  // namespace
