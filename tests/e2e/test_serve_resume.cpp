// Resuming a cut stream on the real `tzero serve` (docs/REPLICAS.md): the token ids in
// responses and stream chunks (the "tzero" field), and `tzero_resume` continuing a request from
// the tokens a client received: for several cut points, greedy and seeded with penalties and a
// stop string, the resumed stream yields exactly the uninterrupted run's remaining tokens and
// text, and ends with its finish reason, usage and logits digest. Bad resume input is a 400
// naming the field.
#include <gtest/gtest.h>

#include <cctype>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

// One streamed choice, chunk by chunk.
struct Streamed {
  std::vector<std::vector<int32_t>> chunk_ids;  // per content or finish chunk: its token ids
  std::vector<std::string> chunk_text;          // and its text
  std::vector<int32_t> ids;                     // all of them
  std::string text, finish, digest, stop_reason;
  json usage;
};

Streamed read_stream(const std::string& body) {
  Streamed s;
  for (const std::string& d : tzero::test::sse_data(body)) {
    if (d == "[DONE]") continue;
    const json j = json::parse(d);
    if (j.contains("usage") && !j["usage"].is_null()) s.usage = j["usage"];
    for (const json& c : j["choices"]) {
      std::string text;
      if (c.contains("delta")) {
        if (c["delta"].contains("content")) text = c["delta"]["content"];
      } else {
        text = c["text"];
      }
      s.text += text;
      if (!c.contains("tzero")) continue;
      std::vector<int32_t> ids;
      for (const json& id : c["tzero"]["tokens"]) ids.push_back(id.get<int32_t>());
      s.ids.insert(s.ids.end(), ids.begin(), ids.end());
      s.chunk_ids.push_back(ids);
      s.chunk_text.push_back(text);
      if (!c["finish_reason"].is_null()) {
        s.finish = c["finish_reason"];
        s.digest = c["tzero"]["logits_digest"];
        s.stop_reason = c["tzero"]["stop_reason"];
      }
    }
  }
  return s;
}

std::string two_letters_in(const std::string& t) {
  for (size_t i = t.size() / 2; i + 1 < t.size(); ++i)
    if (std::isalpha(static_cast<unsigned char>(t[i])) &&
        std::isalpha(static_cast<unsigned char>(t[i + 1])))
      return t.substr(i, 2);
  return "";
}

// Streams `base` uninterrupted, then for a cut after each chunk (and at token counts between
// chunks) resumes with the ids received so far: the resumed stream is the rest, exactly.
void expect_resumes_exactly(httplib::Client& c, const std::string& path, json base,
                            const std::string& what) {
  base["stream_options"] = {{"include_usage", true}};
  int st = 0;
  const Streamed ref = read_stream(tzero::test::post_stream(c, path, base, &st));
  ASSERT_EQ(st, 200) << what;
  ASSERT_GE(ref.ids.size(), 4u) << what;
  ASSERT_EQ(ref.digest.size(), 32u) << what;
  ASSERT_EQ(ref.usage["completion_tokens"].get<size_t>(), ref.ids.size()) << what;
  // The whole response names the same ids.
  json whole = base;
  whole.erase("stream_options");
  const json w = tzero::test::post_json(c, path, whole, &st);
  ASSERT_EQ(st, 200) << what;
  EXPECT_EQ(w["choices"][0]["tzero"]["tokens"], json(ref.ids)) << what;
  EXPECT_EQ(w["choices"][0]["tzero"]["logits_digest"], ref.digest) << what;

  // Cut points: none received, and after each chunk (the finish chunk's too: cut before
  // [DONE]), with the ids and the text the client has then.
  std::vector<std::pair<size_t, std::string>> cuts = {{0, ""}};  // (k, text received)
  size_t k = 0;
  std::string received;
  for (size_t i = 0; i < ref.chunk_ids.size(); ++i) {
    k += ref.chunk_ids[i].size();
    received += ref.chunk_text[i];
    if (k != cuts.back().first) cuts.emplace_back(k, received);
  }
  int n_checked = 0;
  for (const auto& [cut, text_before] : cuts) {
    json r = base;
    r["tzero_resume"] = {
        {"tokens", std::vector<int32_t>(ref.ids.begin(), ref.ids.begin() + long(cut))}};
    const Streamed got = read_stream(tzero::test::post_stream(c, path, r, &st));
    ASSERT_EQ(st, 200) << what << " k=" << cut;
    EXPECT_EQ(got.ids, std::vector<int32_t>(ref.ids.begin() + long(cut), ref.ids.end()))
        << what << " k=" << cut;
    EXPECT_EQ(text_before + got.text, ref.text) << what << " k=" << cut;
    EXPECT_EQ(got.digest, ref.digest) << what << " k=" << cut;
    EXPECT_EQ(got.finish, ref.finish) << what << " k=" << cut;
    EXPECT_EQ(got.stop_reason, ref.stop_reason) << what << " k=" << cut;
    EXPECT_EQ(got.usage["completion_tokens"], ref.usage["completion_tokens"]) << what;
    EXPECT_EQ(got.usage["prompt_tokens"], ref.usage["prompt_tokens"]) << what;
    ++n_checked;
  }
  EXPECT_GE(n_checked, 4) << what;
  // Non-streaming: the rest as one response.
  json r = whole;
  const size_t half = ref.ids.size() / 2;
  r["tzero_resume"] = {
      {"tokens", std::vector<int32_t>(ref.ids.begin(), ref.ids.begin() + long(half))}};
  const json rw = tzero::test::post_json(c, path, r, &st);
  ASSERT_EQ(st, 200) << rw.dump();
  EXPECT_EQ(rw["choices"][0]["tzero"]["tokens"],
            json(std::vector<int32_t>(ref.ids.begin() + long(half), ref.ids.end())));
  EXPECT_EQ(rw["choices"][0]["tzero"]["logits_digest"], ref.digest);
}

const json kSeeded = {{"temperature", 0.9},
                      {"top_p", 0.9},
                      {"top_k", 40},
                      {"seed", 77},
                      {"presence_penalty", 0.5},
                      {"frequency_penalty", 0.4},
                      {"repetition_penalty", 1.2}};

// Proves: greedy and seeded-with-penalties completions, with and without a stop string, and a
// chat, resume after every chunk to exactly the uninterrupted run's tokens, text and digest.
TEST(ServeResume, ResumedStreamIsTheRestOfTheUninterruptedOne) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json greedy = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  json seeded = greedy;
  for (auto it = kSeeded.begin(); it != kSeeded.end(); ++it) seeded[it.key()] = it.value();
  expect_resumes_exactly(*c, "/v1/completions", greedy, "greedy");
  expect_resumes_exactly(*c, "/v1/completions", seeded, "seeded");
  for (json base : {greedy, seeded}) {
    int st = 0;
    const json w = tzero::test::post_json(*c, "/v1/completions", base, &st);
    const std::string stop = two_letters_in(w["choices"][0]["text"].get<std::string>());
    ASSERT_FALSE(stop.empty()) << w.dump();
    base["stop"] = stop;
    const json cut = tzero::test::post_json(*c, "/v1/completions", base, &st);
    ASSERT_EQ(cut["choices"][0]["tzero"]["stop_reason"], "stop_string") << cut.dump();
    expect_resumes_exactly(*c, "/v1/completions", base, "stop " + stop);
  }
  json chat = seeded;
  chat.erase("prompt");
  chat["messages"] = {{{"role", "user"}, {"content", "Tell me a story"}}};
  expect_resumes_exactly(*c, "/v1/chat/completions", chat, "chat");
}

// Proves: a seeded run resumed without the seed it was given samples something else (so the
// equality above depends on the seed and the step offset, not on luck), and resuming from tokens
// that are not the run's own continues from them as an ordinary prompt would not.
TEST(ServeResume, ResumeDependsOnSeedAndTokens) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  json base = {{"prompt", "Once upon a time"}, {"max_tokens", 24}};
  for (auto it = kSeeded.begin(); it != kSeeded.end(); ++it) base[it.key()] = it.value();
  int st = 0;
  const json w = tzero::test::post_json(*c, "/v1/completions", base, &st);
  ASSERT_EQ(st, 200);
  const std::vector<int32_t> ids = w["choices"][0]["tzero"]["tokens"];
  ASSERT_GE(ids.size(), 8u);
  const std::vector<int32_t> head(ids.begin(), ids.begin() + 4), rest(ids.begin() + 4, ids.end());
  json r = base;
  r["tzero_resume"] = {{"tokens", head}};
  EXPECT_EQ(tzero::test::post_json(*c, "/v1/completions", r, &st)["choices"][0]["tzero"]["tokens"],
            json(rest));
  r["seed"] = 78;
  EXPECT_NE(tzero::test::post_json(*c, "/v1/completions", r, &st)["choices"][0]["tzero"]["tokens"],
            json(rest));
  // The same tokens appended to the prompt as a plain prompt: the step index restarts at 0 and
  // the penalties see them as prompt, so the continuation differs.
  const auto cli =
      tzero::test::run_tzero({"tokenize", "-m", tzero::test::generated_model("tiny", "q8_0"), "-p",
                              "Once upon a time", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::vector<int32_t> prompt = json::parse(cli.out)["ids"];
  prompt.insert(prompt.end(), head.begin(), head.end());
  json plain = base;
  plain["prompt"] = prompt;
  plain["max_tokens"] = int(rest.size());
  EXPECT_NE(
      tzero::test::post_json(*c, "/v1/completions", plain, &st)["choices"][0]["tzero"]["tokens"],
      json(rest));
}

// Proves: bad resume input is a 400 naming the field: ids outside the vocabulary, more ids than
// max_tokens, n > 1, a wrong shape, an unknown key, echo, a grammar, and ids that would have
// stopped the request before their last one.
TEST(ServeResume, BadResumeInputIsA400NamingTheField) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json base = {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}};
  int st = 0;
  const json w = tzero::test::post_json(*c, "/v1/completions", base, &st);
  ASSERT_EQ(st, 200);
  const std::vector<int32_t> ids = w["choices"][0]["tzero"]["tokens"];
  ASSERT_EQ(ids.size(), 8u);
  auto with = [&](const json& resume) {
    json r = base;
    r["tzero_resume"] = resume;
    return r;
  };
  struct Case {
    json body;
    std::string param, what;
  };
  json n2 = with({{"tokens", {ids[0]}}});
  n2["n"] = 2;
  json echo = with({{"tokens", {ids[0]}}});
  echo["echo"] = true;
  json grammar = with({{"tokens", {ids[0]}}});
  grammar["grammar"] = "root ::= \"a\"";
  json stopped = with({{"tokens", ids}});
  stopped["max_tokens"] = 8;
  stopped["stop_token_ids"] = {ids[2]};
  const std::vector<Case> cases = {
      {with({{"tokens", {1, 99999}}}), "tzero_resume.tokens", "outside the vocabulary"},
      {with({{"tokens", {-1}}}), "tzero_resume.tokens", "negative"},
      {with({{"tokens", json(std::vector<int32_t>(9, ids[0]))}}), "tzero_resume.tokens",
       "more than max_tokens"},
      {n2, "tzero_resume", "n > 1"},
      {with(json::array({1})), "tzero_resume", "not an object"},
      {with(json::object()), "tzero_resume.tokens", "no tokens"},
      {with({{"tokens", {1}}, {"step", 3}}), "tzero_resume.step", "unknown key"},
      {echo, "tzero_resume", "echo"},
      {grammar, "tzero_resume", "grammar"},
      {stopped, "tzero_resume", "a stop token before the last resumed token"},
  };
  for (const Case& k : cases) {
    const json e = tzero::test::post_json(*c, "/v1/completions", k.body, &st);
    EXPECT_EQ(st, 400) << k.what << ": " << e.dump();
    EXPECT_EQ(e["error"]["param"], k.param) << k.what << ": " << e.dump();
  }
  // A stop token at the last resumed token: nothing is left, the request ends as it did.
  json last = with({{"tokens", std::vector<int32_t>(ids.begin(), ids.begin() + 3)}});
  last["stop_token_ids"] = {ids[2]};
  const json r = tzero::test::post_json(*c, "/v1/completions", last, &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["tzero"]["stop_reason"], "stop_token");
  EXPECT_EQ(r["choices"][0]["tzero"]["tokens"], json::array());
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
}

}  // namespace
