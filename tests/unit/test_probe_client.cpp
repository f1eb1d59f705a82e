// The probe's OpenAI client without a network: exact number parsing and its limits (nesting,
// document memory, deadline, duplicate keys), both logprob layouts, server-sent events, error
// bodies (quoted escaped), Retry-After, request bodies, prompt files.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "probe/client.h"
#include "probe/probe.h"

using namespace tzero::probe;

TEST(ProbeClient, ExactNumbersKeepTheirText) {
  const ojson j = parse_exact(R"({"a": -0.10000000000000001, "b": 1e-3, "c": 7, "d": "x"})", "t");
  auto a = exact_number(j["a"]);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->text, "-0.10000000000000001");
  EXPECT_EQ(a->value, -0.1);
  EXPECT_EQ(exact_number(j["b"])->text, "1e-3");
  EXPECT_EQ(exact_number(j["b"])->value, 0.001);
  EXPECT_EQ(exact_number(j["c"])->value, 7.0);
  EXPECT_FALSE(exact_number(j["d"]));
  // Object keys stay in the server's order.
  const ojson o = parse_exact(R"({"z": 1, "a": 2})", "t");
  EXPECT_EQ(o.begin().key(), "z");
  EXPECT_THROW(parse_exact("{nope", "the response"), ProbeError);
}

// The message of the ProbeError parse_exact throws, "" when it does not throw.
std::string refusal(const std::string& text, const ParseLimits& limits = {},
                    bool* limit = nullptr) {
  try {
    parse_exact(text, "the response", limits);
  } catch (const ProbeError& e) {
    if (limit) *limit = e.limit;
    return e.what();
  }
  return "";
}

TEST(ProbeClient, JsonNestingIsLimited) {
  const std::string ok = std::string(256, '[') + std::string(256, ']');
  EXPECT_EQ(refusal(ok), "");
  bool limit = false;
  const std::string deep = std::string(257, '[') + std::string(257, ']');
  EXPECT_EQ(refusal(deep, {}, &limit),
            "the response is refused: it is JSON nested deeper than 256 levels (arrays and "
            "objects inside each other; at byte 257)");
  EXPECT_TRUE(limit);
  // Brackets inside strings do not count; 10 MB of `{` is refused at its 257th byte.
  EXPECT_EQ(refusal("[\"" + std::string(1000, '[') + "\"]"), "");
  EXPECT_NE(refusal(std::string(10'000'000, '{')).find("at byte 257)"), std::string::npos);
}

TEST(ProbeClient, JsonDocumentMemoryAndTimeAreLimited) {
  std::string zeros = "[0";
  for (int i = 0; i < 100'000; ++i) zeros += ",0";
  zeros += "]";
  EXPECT_EQ(refusal(zeros), "");
  ParseLimits small;
  small.max_document_bytes = size_t(1) << 20;  // 100,001 values of 24 bytes: over 1 MiB
  bool limit = false;
  EXPECT_EQ(refusal(zeros, small, &limit),
            "the response is refused: its document would take more than 1 MiB of memory");
  EXPECT_TRUE(limit);
  ParseLimits late;
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_EQ(refusal(zeros, late),
            "the response is refused: its parse passed the request's deadline");
  // Malformed text is not a limit, and its quote is one escaped line.
  limit = true;
  const std::string bad = refusal("{\"a\": \x1b[2J\n" + std::string(1000, 'x'), {}, &limit);
  EXPECT_FALSE(limit);
  EXPECT_NE(bad.find("the response is not JSON ("), std::string::npos) << bad;
  EXPECT_NE(bad.find("): {\"a\": \\x1b[2J xxx"), std::string::npos) << bad;
  EXPECT_NE(bad.find("... (1011 bytes)"), std::string::npos) << bad;
  EXPECT_EQ(bad.find('\x1b'), std::string::npos) << bad;
}

TEST(ProbeClient, DuplicateKeysKeepTheFirstPlaceAndTheLastValue) {
  const ojson j = parse_exact(R"({"a": 1, "b": 2, "a": 3})", "t");
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j.begin().key(), "a");
  EXPECT_EQ(j["a"], 3);
  EXPECT_EQ(j["b"], 2);
  // A wide object (merged by sorting, not pairwise), with a key three times.
  std::string wide = "{";
  for (int i = 0; i < 20; ++i) wide += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ",";
  wide += "\"k3\": 103, \"k7\": 107, \"k3\": 203}";
  const ojson w = parse_exact(wide, "t");
  ASSERT_EQ(w.size(), 20u);
  int i = 0;
  for (auto it = w.begin(); it != w.end(); ++it, ++i) EXPECT_EQ(it.key(), "k" + std::to_string(i));
  EXPECT_EQ(w["k3"], 203);
  EXPECT_EQ(w["k7"], 107);
  EXPECT_EQ(w["k19"], 19);
}

TEST(ProbeClient, LegacyCompletionLogprobs) {
  const std::string body = R"({"id":"x","object":"text_completion","system_fingerprint":"fp_1",
    "choices":[{"index":0,"text":" a b","finish_reason":"length","logprobs":{
      "tokens":[" a"," b"],"token_logprobs":[-0.5,-1.25],
      "top_logprobs":[{" a":-0.5," c":-2.0},{" b":-1.25," z":-1.5}],"text_offset":[0,2]}}]})";
  const Completion c = parse_completion(body, false);
  EXPECT_EQ(c.text, " a b");
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_EQ(c.system_fingerprint, "fp_1");
  ASSERT_TRUE(c.has_logprobs);
  ASSERT_EQ(c.tokens.size(), 2u);
  EXPECT_EQ(c.tokens[1].text, " b");
  EXPECT_EQ(c.tokens[1].logprob.value, -1.25);
  ASSERT_EQ(c.tokens[0].top.size(), 2u);
  EXPECT_EQ(c.tokens[0].top[1].token, " c");
  EXPECT_EQ(c.tokens[1].top[1].logprob.text, "-1.5");
}

TEST(ProbeClient, ChatLogprobsAtEitherEndpoint) {
  const std::string chat = R"({"choices":[{"message":{"role":"assistant","content":"Hi"},
    "logprobs":{"content":[{"token":"Hi","logprob":-0.01,"bytes":[72,105],
      "top_logprobs":[{"token":"Hi","logprob":-0.01},{"token":"Hello","logprob":-4.6}]}]},
    "finish_reason":"stop"}]})";
  Completion c = parse_completion(chat, true);
  EXPECT_EQ(c.text, "Hi");
  ASSERT_TRUE(c.has_logprobs);
  ASSERT_EQ(c.tokens.size(), 1u);
  EXPECT_EQ(c.tokens[0].top[1].token, "Hello");
  EXPECT_EQ(c.system_fingerprint, "");
  // llama.cpp's /v1/completions answers the chat layout.
  const std::string llama = R"({"choices":[{"text":"Hi","logprobs":{"content":[{"id":5,
    "token":"Hi","logprob":-0.01,"top_logprobs":[]}]}}]})";
  c = parse_completion(llama, false);
  ASSERT_TRUE(c.has_logprobs);
  EXPECT_EQ(c.tokens[0].logprob.text, "-0.01");
}

TEST(ProbeClient, MissingOrNullLogprobs) {
  EXPECT_FALSE(parse_completion(R"({"choices":[{"text":"x"}]})", false).has_logprobs);
  EXPECT_FALSE(
      parse_completion(R"({"choices":[{"text":"x","logprobs":null}]})", false).has_logprobs);
  EXPECT_FALSE(parse_completion(
                   R"({"choices":[{"message":{"content":"x"},"logprobs":{"content":null}}]})", true)
                   .has_logprobs);
  EXPECT_THROW(parse_completion(R"({"choices":[]})", false), ProbeError);
  EXPECT_THROW(parse_completion(R"({"error":{"message":"boom"}})", false), ProbeError);
}

TEST(ProbeClient, ServerSentEvents) {
  SseAccumulator acc(false);
  const std::string stream =
      ": keep-alive\r\n\r\n"
      "data: {\"system_fingerprint\":\"fp\",\"choices\":[{\"text\":\" a\",\"logprobs\":{"
      "\"tokens\":[\" a\"],\"token_logprobs\":[-0.5],\"top_logprobs\":[{\" a\":-0.5}]}}]}\r\n\r\n"
      "event: message\n"
      "data: {\"choices\":[{\"text\":\" b\",\"logprobs\":{\"tokens\":[\" b\"],"
      "\"token_logprobs\":[-0.75],\"top_logprobs\":[null]}}]}\n\n"
      "data: {\"choices\":[{\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  // Fed in awkward pieces: the parser must not care where the bytes split.
  for (size_t i = 0; i < stream.size(); i += 7)
    acc.feed(stream.data() + i, std::min<size_t>(7, stream.size() - i));
  EXPECT_TRUE(acc.done());
  const Completion c = acc.finish();
  EXPECT_EQ(c.text, " a b");
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_EQ(c.system_fingerprint, "fp");
  ASSERT_TRUE(c.has_logprobs);
  ASSERT_EQ(c.tokens.size(), 2u);
  EXPECT_EQ(c.tokens[1].logprob.value, -0.75);
  EXPECT_TRUE(c.tokens[1].top.empty());
}

TEST(ProbeClient, ChatStreamAndErrors) {
  SseAccumulator acc(true);
  const std::string s =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"He\"},\"logprobs\":null}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"llo\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}";  // no [DONE], no blank
  acc.feed(s.data(), s.size());
  const Completion c = acc.finish();
  EXPECT_EQ(c.text, "Hello");
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_FALSE(c.has_logprobs);
  SseAccumulator err(true);
  const std::string e = "error: {\"message\":\"out of memory\"}\n\n";
  try {
    err.feed(e.data(), e.size());
    FAIL() << "no throw";
  } catch (const ProbeError& x) {
    EXPECT_NE(std::string(x.what()).find("out of memory"), std::string::npos);
  }
  SseAccumulator empty(false);
  EXPECT_THROW(empty.finish(), ProbeError);
}

TEST(ProbeClient, ErrorMessages) {
  EXPECT_EQ(error_message(R"({"error":{"message":"bad model","type":"x"}})"), "bad model");
  EXPECT_EQ(error_message(R"({"error":"rate limited"})"), "rate limited");
  EXPECT_EQ(error_message(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_message("Service Unavailable\n"), "Service Unavailable");
  EXPECT_EQ(error_message(""), "(empty body)");
  // The server's text: one line, 200 bytes at most, escape sequences as \xHH.
  EXPECT_EQ(error_message("\x1b[2J\x1b]0;pwned\x07 gone\r\nnext line\n\n"),
            "\\x1b[2J\\x1b]0;pwned\\x07 gone  next line");
  EXPECT_EQ(error_message(R"({"error":{"message":"\u001b[31mred"}})"), "\\x1b[31mred");
  EXPECT_EQ(error_message(std::string(300, 'x')), std::string(200, 'x') + "... (300 bytes)");
  // A body nested too deeply is quoted as text, never parsed.
  EXPECT_EQ(error_message(std::string(100'000, '[')), std::string(200, '[') + "... (100000 bytes)");
}

TEST(ProbeClient, RetryDelays) {
  EXPECT_EQ(retry_delay_s("3", 0), 3.0);
  EXPECT_EQ(retry_delay_s("0", 4), 0.0);
  EXPECT_EQ(retry_delay_s("1000", 0), kMaxRetryAfterS);
  EXPECT_EQ(retry_delay_s("1e308", 0), kMaxRetryAfterS);
  EXPECT_EQ(retry_delay_s("", 0), 0.5);
  EXPECT_EQ(retry_delay_s("", 2), 2.0);
  EXPECT_EQ(retry_delay_s("Wed, 21 Oct 2015 07:28:00 GMT", 10), 8.0);
}

TEST(ProbeClient, RequestBodies) {
  CompletionRequest r;
  r.model = "m";
  r.prompt = "Hi";
  r.max_tokens = 4;
  auto j = nlohmann::json::parse(request_body(r));
  EXPECT_EQ(j["prompt"], "Hi");
  EXPECT_EQ(j["temperature"], 0.0);
  EXPECT_EQ(j["logprobs"], 5);
  EXPECT_FALSE(j.contains("seed"));
  EXPECT_EQ(j["stream"], false);
  r.chat = true;
  r.seed = 1234;
  r.temperature = 0.8;
  r.stream = true;
  j = nlohmann::json::parse(request_body(r));
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][0]["content"], "Hi");
  EXPECT_EQ(j["logprobs"], true);
  EXPECT_EQ(j["top_logprobs"], 5);
  EXPECT_EQ(j["seed"], 1234);
  r.logprobs = false;
  EXPECT_FALSE(nlohmann::json::parse(request_body(r)).contains("logprobs"));
}

TEST(ProbeClient, BaseUrls) {
  EXPECT_EQ(Client("http://127.0.0.1:8080", "", 1).endpoint(false),
            "http://127.0.0.1:8080/v1/completions");
  EXPECT_EQ(Client("http://localhost:8000/v1/", "", 1).endpoint(true),
            "http://localhost:8000/v1/chat/completions");
  EXPECT_EQ(Client("https://api.example.com/openai", "", 1).endpoint(false),
            "https://api.example.com:443/openai/v1/completions");
  EXPECT_THROW(Client("localhost:8080", "", 1), ProbeError);
  EXPECT_THROW(Client("http://h:99999", "", 1), ProbeError);
}

TEST(ProbeClient, PromptFiles) {
  EXPECT_EQ(parse_prompts("a\r\n\nb c\n", "f"), (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(parse_prompts(" [\"x\\ny\", \"z\"]", "f"), (std::vector<std::string>{"x\ny", "z"}));
  EXPECT_THROW(parse_prompts("\n \n", "f"), ProbeError);  // blank lines are skipped
  EXPECT_THROW(parse_prompts("[1]", "f"), ProbeError);
  EXPECT_THROW(parse_prompts("[\"a\"", "f"), ProbeError);
}
