// Tool calls (src/server/tool_calls.h): the tools a request may give, the prompt they go into
// (a real template that renders tools, and one that does not), the grammar of each
// tool_choice and format, and the reply split into content and calls however it streams.
#include <gtest/gtest.h>

#include <memory>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "server/api_error.h"
#include "server/tool_calls.h"
#include "unit/real_chat_templates.h"

namespace tzero::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "ping"}}
])");

std::shared_ptr<ToolRequest> tools_with(const ojson& choice, ToolFormat f = ToolFormat::hermes) {
  ojson body = {{"tools", kTools}};
  if (!choice.is_null()) body["tool_choice"] = choice;
  auto t = parse_tools(body);
  t->format = f;
  return t;
}

bool matches(const std::string& gbnf, const std::string& s) {
  GrammarMatcher m(std::make_shared<const Grammar>(compile_gbnf(gbnf)));
  uint32_t st = m.start();
  for (const char c : s)
    if ((st = m.next(st, uint8_t(c))) == GrammarMatcher::kDead) return false;
  return m.accepting(st);
}

const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

TEST(ToolCalls, GrammarsOfEachChoice) {
  const std::string required = tool_grammar(*tools_with("required"));
  EXPECT_TRUE(matches(required, kCall));
  EXPECT_TRUE(matches(required, kCall + "\n" + kCall));
  EXPECT_TRUE(
      matches(required, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(matches(required, "Sure."));
  EXPECT_FALSE(matches(required,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"))
      << "city is required";
  EXPECT_FALSE(
      matches(required, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));

  auto single = tools_with("required");
  single->parallel = false;
  EXPECT_FALSE(matches(tool_grammar(*single), kCall + "\n" + kCall));

  const std::string named = tool_grammar(
      *tools_with(ojson::parse(R"({"type": "function", "function": {"name": "ping"}})")));
  EXPECT_FALSE(matches(named, kCall));
  EXPECT_TRUE(
      matches(named, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"x\": 1}}\n</tool_call>"));

  // auto: any text without the opening tag, then optional calls held to the schemas.
  const std::string automatic = tool_grammar(*tools_with("auto"));
  for (const char* ok : {"", "Sure, it is sunny.", "a < b, <tool_cal and <<tool_call", "x\n<tool_"})
    EXPECT_TRUE(matches(automatic, ok)) << ok;
  EXPECT_TRUE(matches(automatic, "Let me check. " + kCall));
  EXPECT_FALSE(matches(automatic, "<tool_call>\nnot json\n</tool_call>"));
  EXPECT_FALSE(matches(automatic, "<<tool_call>x"));
  EXPECT_EQ(tool_grammar(*tools_with("none")), "");

  // Llama 3: the whole reply is the call, with "parameters".
  const std::string llama = tool_grammar(*tools_with("required", ToolFormat::llama3));
  EXPECT_TRUE(matches(llama, R"({"name": "get_weather", "parameters": {"city": "Rome"}})"));
  EXPECT_FALSE(matches(llama, R"({"name": "get_weather", "arguments": {"city": "Rome"}})"));
  const std::string llama_auto = tool_grammar(*tools_with("auto", ToolFormat::llama3));
  EXPECT_TRUE(matches(llama_auto, "It is sunny."));
  EXPECT_TRUE(matches(llama_auto, R"({"name": "ping", "parameters": {}})"));
  EXPECT_FALSE(matches(llama_auto, R"({"name": "ping")"));
}

TEST(ToolCalls, ParserSplitsContentAndCallsHoweverTheTextStreams) {
  const std::string reply = "Checking <tool or not. " + kCall + "\n" +
                            "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
  for (size_t chunk : {size_t(1), size_t(3), size_t(7), reply.size()}) {
    ToolCallParser p(ToolFormat::hermes, "call_x_");
    std::string content;
    std::vector<ToolCall> calls;
    for (size_t i = 0; i < reply.size(); i += chunk) {
      content += p.push(reply.substr(i, chunk));
      for (ToolCall& c : p.take()) calls.push_back(c);
      // Text that could still open a call is never released as content.
      EXPECT_EQ(content.find("<tool_"), std::string::npos) << content;
    }
    content += p.finish();
    for (ToolCall& c : p.take()) calls.push_back(c);
    EXPECT_EQ(content, "Checking <tool or not. ") << chunk;
    ASSERT_EQ(calls.size(), 2u) << chunk;
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, R"({"city":"Paris"})");
    EXPECT_EQ(calls[0].id, "call_x_0");
    EXPECT_EQ(calls[1].name, "ping");
    EXPECT_EQ(calls[1].arguments, "{}");
  }
  // An unfinished call (max_tokens) comes back as content.
  ToolCallParser cut(ToolFormat::hermes, "c");
  std::string text = cut.push("<tool_call>\n{\"name\": \"pi");
  text += cut.finish();
  EXPECT_EQ(text, "<tool_call>\n{\"name\": \"pi");
  EXPECT_TRUE(cut.take().empty());

  ToolCallParser llama(ToolFormat::llama3, "c");
  EXPECT_EQ(llama.push("  {\"name\": \"ping\", "), "");
  EXPECT_EQ(llama.push("\"parameters\": {\"a\": [1]}}"), "");
  EXPECT_EQ(llama.finish(), "");
  const std::vector<ToolCall> lc = llama.take();
  ASSERT_EQ(lc.size(), 1u);
  EXPECT_EQ(lc[0].arguments, R"({"a":[1]})");
  ToolCallParser words(ToolFormat::llama3, "c");
  EXPECT_EQ(words.push(" It is"), " It is");
  EXPECT_EQ(words.push(" {sunny}"), " {sunny}");
}

TEST(ToolCalls, PromptThroughARealTemplateAndThroughTheFallback) {
  const ojson msgs = ojson::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
  ])");
  auto t = tools_with("auto");
  // Qwen 2.5 renders tools, calls (arguments as an object) and tool turns itself.
  const std::string qwen = render_tool_prompt(tzero::test::kQwen25, msgs, t.get(), "", "");
  EXPECT_NE(qwen.find("# Tools"), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("\"name\": \"get_weather\""), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << qwen;
  EXPECT_NE(qwen.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << qwen;
  EXPECT_EQ(tool_format_of(tzero::test::kQwen25), ToolFormat::hermes);

  // Llama 3's published template knows no tools: they go into a system message, the turns into
  // text, in its JSON format.
  EXPECT_EQ(tool_format_of(tzero::test::kLlama3), ToolFormat::llama3);
  t->format = ToolFormat::llama3;
  const std::string llama =
      render_tool_prompt(tzero::test::kLlama3, msgs, t.get(), "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(llama.rfind("<|begin_of_text|><|start_header_id|>system<|end_header_id|>", 0), 0u)
      << llama;
  EXPECT_NE(llama.find("\"parameters\": an object"), std::string::npos) << llama;
  EXPECT_NE(llama.find(R"({"name":"get_weather","parameters":{"city":"Paris"}})"),
            std::string::npos)
      << llama;
  EXPECT_NE(llama.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << llama;
}

TEST(ToolCalls, BadToolsAreRefusedNamingTheField) {
  auto param_of = [](const ojson& body) {
    try {
      parse_tools(body);
    } catch (const ApiError& e) {
      return e.param;
    }
    return std::string("accepted");
  };
  EXPECT_EQ(param_of({{"tools", 3}}), "tools");
  EXPECT_EQ(param_of({{"tools", {{{"type", "retrieval"}}}}}), "tools[0]");
  EXPECT_EQ(param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "a b"}}}}}}}),
            "tools[0].function.name");
  EXPECT_EQ(
      param_of({{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"x", 1}}}}}}}),
      "tools[0].function.x");
  EXPECT_EQ(param_of({{"tools", kTools}, {"tool_choice", "always"}}), "tool_choice");
  EXPECT_EQ(param_of({{"tools", ojson::array()}, {"tool_choice", "required"}}), "tool_choice");
  ojson twice = kTools;
  twice.push_back(kTools[1]);
  EXPECT_EQ(param_of({{"tools", twice}}), "tools[2].function.name");
  EXPECT_EQ(param_of({{"tools", kTools}, {"parallel_tool_calls", "yes"}}), "parallel_tool_calls");
  EXPECT_EQ(param_of({{"tools", kTools}}), "accepted");
}

}  // namespace
}  // namespace tzero::server
