// Structured output and tool calls through the real `tzero serve` (docs/GRAMMAR.md,
// docs/SERVER.md "Tool calls"): response_format json_schema / json_object, llama.cpp's grammar
// and json_schema fields, vLLM's guided_choice, tools with tool_choice required / named /
// auto, plain and streamed, repeated bit for bit; and the 400s for what cannot compile.
#include <gtest/gtest.h>

#include <regex>

#include "e2e/serve_test_util.h"

using nlohmann::json;

namespace {

// The assistant content of choice i (null with tool calls: "").
std::string content_of(const json& r, size_t i = 0) {
  const json& m = r["choices"][i]["message"];
  return m["content"].is_null() ? "" : m["content"].get<std::string>();
}

// A random-weight model writes anything the grammar allows: sample at temperature 1 with
// several seeds so the checks see varied outputs.
json seeded(json body, int seed) {
  body["temperature"] = 1.0;
  body["seed"] = seed;
  return body;
}

const json kPersonSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}
  },
  "required": ["name", "age"],
  "additionalProperties": false
})");

TEST(ServeStructured, JsonSchemaOutputsValidateAndRepeatBitForBit) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json body = {
      {"messages", {{{"role", "user"}, {"content", "A person, as JSON."}}}},
      {"max_tokens", 400},
      {"response_format",
       {{"type", "json_schema"},
        {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", kPersonSchema}}}}}};
  for (int seed = 1; seed <= 6; ++seed) {
    int st = 0;
    const json r = tzero::test::post_json(*c, "/v1/chat/completions", seeded(body, seed), &st);
    ASSERT_EQ(st, 200) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
    const json out = json::parse(content_of(r));  // throws (fails) when not JSON
    ASSERT_TRUE(out.is_object());
    ASSERT_TRUE(out["name"].is_string()) << out.dump();
    EXPECT_LE(out["name"].get<std::string>().size(), 12u * 6);  // 12 characters, escapes 6 bytes
    ASSERT_TRUE(out["age"].is_number_integer()) << out.dump();
    EXPECT_GE(out["age"].get<int64_t>(), 0);
    EXPECT_LE(out["age"].get<int64_t>(), 150);
    for (auto it = out.begin(); it != out.end(); ++it)
      EXPECT_TRUE(it.key() == "name" || it.key() == "age" || it.key() == "tags") << it.key();
    if (out.contains("tags")) {
      EXPECT_LE(out["tags"].size(), 3u);
      for (const json& t : out["tags"]) EXPECT_TRUE(t == "a" || t == "b" || t == "c");
    }
    // Again, and streamed: the same bits.
    const json again = tzero::test::post_json(*c, "/v1/chat/completions", seeded(body, seed), &st);
    EXPECT_EQ(content_of(again), content_of(r));
    json sb = seeded(body, seed);
    sb["stream"] = true;
    const std::string sse = tzero::test::post_stream(*c, "/v1/chat/completions", sb, &st);
    EXPECT_EQ(tzero::test::gen_of_stream(sse).text, content_of(r));
  }
}

TEST(ServeStructured, JsonObjectGrammarAndChoiceFields) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  // response_format json_object on completions too.
  for (int seed = 1; seed <= 3; ++seed) {
    const json r = tzero::test::post_json(*c, "/v1/completions",
                                          seeded({{"prompt", "JSON:"},
                                                  {"max_tokens", 300},
                                                  {"response_format", {{"type", "json_object"}}}},
                                                 seed),
                                          &st);
    ASSERT_EQ(st, 200) << r.dump();
    if (r["choices"][0]["finish_reason"] == "stop") {
      EXPECT_TRUE(json::parse(r["choices"][0]["text"].get<std::string>()).is_object());
    }
  }
  // llama.cpp's grammar field.
  const std::regex date(R"(\d{4}-\d{2}-\d{2})");
  for (int seed = 1; seed <= 3; ++seed) {
    const json r = tzero::test::post_json(
        *c, "/v1/completions",
        seeded({{"prompt", "Date:"},
                {"max_tokens", 40},
                {"grammar", "root ::= [0-9]{4} \"-\" [0-9]{2} \"-\" [0-9]{2}\n"}},
               seed),
        &st);
    ASSERT_EQ(st, 200) << r.dump();
    EXPECT_TRUE(std::regex_match(r["choices"][0]["text"].get<std::string>(), date)) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  }
  // vLLM's guided_choice, with n choices: each one of the list.
  const json r = tzero::test::post_json(*c, "/v1/completions",
                                        seeded({{"prompt", "Pick:"},
                                                {"max_tokens", 20},
                                                {"n", 4},
                                                {"guided_choice", {"red", "green", "blue \"x\""}}},
                                               7),
                                        &st);
  ASSERT_EQ(st, 200) << r.dump();
  for (const json& ch : r["choices"]) {
    const std::string t = ch["text"];
    EXPECT_TRUE(t == "red" || t == "green" || t == "blue \"x\"") << t;
  }
}

TEST(ServeStructured, DeadEndEndsWithItsOwnFinishReason) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  int st = 0;
  // With ignore_eos the complete grammar admits nothing more: the request ends, never hangs
  // and never samples an unconstrained token.
  const json r = tzero::test::post_json(
      *c, "/v1/completions",
      {{"prompt", "x"}, {"max_tokens", 50}, {"ignore_eos", true}, {"grammar", "root ::= \"ok\""}},
      &st);
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], "ok");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "grammar_dead_end");
}

TEST(ServeStructured, WhatCannotCompileIsA400NamingIt) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  auto expect_400 = [&](const json& body, const std::string& param, const std::string& text) {
    int st = 0;
    const json r = tzero::test::post_json(*c, "/v1/chat/completions", body, &st);
    ASSERT_EQ(st, 400) << r.dump();
    EXPECT_EQ(r["error"]["param"], param) << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(text), std::string::npos) << r.dump();
  };
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  expect_400({{"messages", msgs}, {"grammar", "root ::= \"a\"\nitem ::= [a-\n"}}, "grammar",
             "line 2");
  expect_400({{"messages", msgs}, {"grammar", "root ::= undefined-rule"}}, "grammar",
             "`undefined-rule` is used but not defined");
  expect_400({{"messages", msgs},
              {"response_format",
               {{"type", "json_schema"},
                {"json_schema",
                 {{"name", "x"}, {"schema", {{"type", "array"}, {"uniqueItems", true}}}}}}}},
             "response_format.json_schema.schema", "uniqueItems");
  expect_400({{"messages", msgs}, {"response_format", {{"type", "yaml"}}}}, "response_format.type",
             "yaml");
  expect_400(
      {{"messages", msgs}, {"grammar", "root ::= \"a\""}, {"json_schema", {{"type", "string"}}}},
      "json_schema", "not both");
  std::string huge = "root ::= \"";
  huge += std::string(300 * 1024, 'a') + "\"";
  expect_400({{"messages", msgs}, {"grammar", huge}}, "grammar", "limit");
  expect_400({{"messages", msgs},
              {"tools", {{{"type", "function"}, {"function", {{"name", "bad name"}}}}}}},
             "tools[0].function.name", "letters");
  expect_400({{"messages", msgs},
              {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
             "tool_choice", "'g'");
}

const json kWeatherTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                  "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                  "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
   "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"],
   "additionalProperties": false}}}
])");

// The calls of a whole response, checked against kWeatherTools.
void check_calls(const json& calls, const std::string& only = "") {
  ASSERT_TRUE(calls.is_array());
  ASSERT_FALSE(calls.empty());
  for (const json& call : calls) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_TRUE(call["id"].is_string());
    const std::string name = call["function"]["name"];
    if (!only.empty()) {
      EXPECT_EQ(name, only);
    }
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    if (name == "get_weather") {
      EXPECT_TRUE(args["city"].is_string()) << args.dump();
      if (args.contains("days")) {
        EXPECT_TRUE(args["days"] >= 1 && args["days"] <= 7);
      }
    } else {
      ASSERT_EQ(name, "get_time");
      EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args.dump();
    }
  }
}

TEST(ServeStructured, ToolCallsRequiredNamedAndStreamed) {
  auto srv = tzero::test::serve_tiny({"--ctx", "2048"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const json base = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                     {"max_tokens", 600},
                     {"tools", kWeatherTools}};
  for (const json& choice :
       {json("required"),
        json::parse(R"({"type": "function", "function": {"name": "get_time"}})")}) {
    for (int seed = 1; seed <= 3; ++seed) {
      json body = seeded(base, seed);
      body["tool_choice"] = choice;
      int st = 0;
      const json r = tzero::test::post_json(*c, "/v1/chat/completions", body, &st);
      ASSERT_EQ(st, 200) << r.dump();
      const json& ch = r["choices"][0];
      EXPECT_EQ(ch["finish_reason"], "tool_calls") << r.dump();
      EXPECT_TRUE(ch["message"]["content"].is_null()) << r.dump();
      check_calls(ch["message"]["tool_calls"], choice.is_object() ? "get_time" : "");
      // Streamed: the deltas add up to the same calls, with the same finish reason.
      body["stream"] = true;
      const std::string sse = tzero::test::post_stream(*c, "/v1/chat/completions", body, &st);
      json calls = json::array();
      std::string finish;
      for (const std::string& d : tzero::test::sse_data(sse)) {
        if (d == "[DONE]") continue;
        const json chunk = json::parse(d);
        for (const json& sc : chunk["choices"]) {
          if (sc["delta"].contains("tool_calls"))
            for (const json& tc : sc["delta"]["tool_calls"]) {
              json call = tc;
              call.erase("index");
              calls.push_back(call);
            }
          if (!sc["finish_reason"].is_null()) finish = sc["finish_reason"];
        }
      }
      EXPECT_EQ(finish, "tool_calls");
      ASSERT_EQ(calls.size(), ch["message"]["tool_calls"].size()) << sse;
      for (size_t k = 0; k < calls.size(); ++k) {
        EXPECT_EQ(calls[k]["function"], ch["message"]["tool_calls"][k]["function"]);
      }
    }
  }
}

TEST(ServeStructured, ToolChoiceAutoAndToolTurns) {
  auto srv = tzero::test::serve_tiny({"--ctx", "2048"});
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  // A conversation that already holds a call and its result renders and runs.
  const json msgs = json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
  ])");
  for (int seed = 1; seed <= 4; ++seed) {
    int st = 0;
    const json r = tzero::test::post_json(*c, "/v1/chat/completions",
                                          seeded({{"messages", msgs},
                                                  {"max_tokens", 200},
                                                  {"tools", kWeatherTools},
                                                  {"tool_choice", "auto"}},
                                                 seed),
                                          &st);
    ASSERT_EQ(st, 200) << r.dump();
    const json& m = r["choices"][0]["message"];
    // Free text, or calls held to the grammar: never a malformed call.
    if (m.contains("tool_calls")) {
      check_calls(m["tool_calls"]);
    }
    EXPECT_EQ(content_of(r).find("<tool_call>"), std::string::npos) << r.dump();
  }
}

}  // namespace

namespace {

// `tzero run --json-schema` / `--grammar` reproduce a constrained server answer: the same text
// and the same logits digest (the "tzero" field).
TEST(ServeStructured, RunReproducesConstrainedAnswers) {
  auto srv = tzero::test::serve_tiny();
  ASSERT_TRUE(srv->ok());
  auto c = srv->client();
  const std::string dir = tzero::test::scratch_dir();
  tzero::test::write_file(dir + "/person.schema.json", kPersonSchema.dump());
  const std::string gbnf = "root ::= [a-z]{3,9} (\" \" [a-z]{2,9}){0,3} \".\"\n";
  tzero::test::write_file(dir + "/words.gbnf", gbnf);
  struct Case {
    json field;
    std::vector<std::string> flag;
  };
  json rf = json::object();
  rf["response_format"] = {{"type", "json_schema"},
                           {"json_schema", {{"name", "p"}, {"schema", kPersonSchema}}}};
  json gf = json::object();
  gf["grammar"] = gbnf;
  const Case cases[] = {{rf, {"--json-schema", dir + "/person.schema.json"}},
                        {gf, {"--grammar", dir + "/words.gbnf"}}};
  for (const Case& cs : cases)
    for (int seed : {3, 4}) {
      json body = {{"prompt", "Write:"}, {"max_tokens", 120}, {"temperature", 0.8}, {"seed", seed}};
      body.update(cs.field);
      int st = 0;
      const json r = tzero::test::post_json(*c, "/v1/completions", body, &st);
      ASSERT_EQ(st, 200) << r.dump();
      std::vector<std::string> args = {"run",
                                       "-m",
                                       tzero::test::generated_model("tiny", "q8_0"),
                                       "-p",
                                       "Write:",
                                       "-n",
                                       "120",
                                       "--temp",
                                       "0.8",
                                       "--seed",
                                       std::to_string(seed),
                                       "--json"};
      args.insert(args.end(), cs.flag.begin(), cs.flag.end());
      const auto run = tzero::test::run_tzero(args);
      ASSERT_EQ(run.exit_code, 0) << run.err;
      const json rj = json::parse(run.out);
      EXPECT_EQ(rj["text"], r["choices"][0]["text"]) << cs.flag[0];
      EXPECT_EQ(rj["logits_digest"], r["choices"][0]["tzero"]["logits_digest"]) << cs.flag[0];
    }
  // A schema run refuses names the file and the keyword.
  tzero::test::write_file(dir + "/bad.schema.json", R"({"type": "string", "format": "email"})");
  const auto bad =
      tzero::test::run_tzero({"run", "-m", tzero::test::generated_model("tiny", "q8_0"),
                              "--json-schema", dir + "/bad.schema.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.schema.json"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("format"), std::string::npos) << bad.err;
}

}  // namespace

// A harmony model (tiny-gpt-oss: gpt-oss's control tokens in its vocabulary) through the chat
// endpoint: replies go through the channel split (server/harmony.h). The random model opens no
// channel, so everything it writes is content: nothing is lost or moved to reasoning, the
// streamed deltas add up to the whole reply, and /v1/completions is not split at all.
TEST(ServeStructured, HarmonyModelRepliesKeepTheirText) {
  tzero::test::ServeProcess srv({"-m", tzero::test::generated_model("tiny-gpt-oss", "q8_0"), "-t",
                                 "2", "--chat-template", "chatml"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  auto c = srv.client();
  for (int seed = 1; seed <= 3; ++seed) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                 {"max_tokens", 24},
                 {"temperature", 1.0},
                 {"seed", seed}};
    int st = 0;
    const json r = tzero::test::post_json(*c, "/v1/chat/completions", body, &st);
    ASSERT_EQ(st, 200) << r.dump();
    const json& msg = r["choices"][0]["message"];
    EXPECT_FALSE(msg.contains("reasoning_content")) << r.dump();
    const std::string whole = msg["content"].is_null() ? "" : msg["content"].get<std::string>();
    body["stream"] = true;
    const std::string sse = tzero::test::post_stream(*c, "/v1/chat/completions", body, &st);
    std::string streamed;
    for (const std::string& d : tzero::test::sse_data(sse)) {
      if (d == "[DONE]") continue;
      const json chunk = json::parse(d);
      for (const json& sc : chunk["choices"]) {
        EXPECT_FALSE(sc["delta"].contains("reasoning_content")) << d;
        if (sc["delta"].contains("content") && sc["delta"]["content"].is_string())
          streamed += sc["delta"]["content"].get<std::string>();
      }
    }
    EXPECT_EQ(streamed, whole) << "seed " << seed;
    // The same text as tzero run gives for the same rendered prompt is the other tests' job;
    // here: the split keeps what the detokenizer wrote.
    EXPECT_FALSE(whole.empty()) << r.dump();
  }
}
