// Chat templates (tokenizer/chat_template.h): the Jinja subset, the named formats and real
// templates as published in model repositories, rendered for a system + user + assistant +
// user conversation. Expected strings are written from the model cards' documented formats.
#include <gtest/gtest.h>

#include "base/error.h"
#include "chat/chat_template.h"
#include "unit/real_chat_templates.h"

namespace {

using tzero::ChatMessage;
using tzero::ChatTemplate;
using tzero::test::kLlama3;
using tzero::test::kQwen25;
using Json = nlohmann::ordered_json;

const std::vector<ChatMessage> kConversation = {
    {"system", "You are terse."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "2+2?"}};

std::string render(const std::string& tmpl, const Json& vars = Json::object()) {
  return ChatTemplate(tmpl).render(vars);
}

// The tzero::Error message a template gives, or "" when it renders.
std::string error_of(const std::string& tmpl, const Json& vars = Json::object()) {
  try {
    ChatTemplate(tmpl).render(vars);
  } catch (const tzero::Error& e) {
    return e.what();
  }
  return "";
}

// --- Real templates, as published (tokenizer_config.json "chat_template") ---------------

// mistralai/Mistral-7B-Instruct-v0.1 (and v0.2), tokenizer_config.json.
const char* kMistral =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ "
    "'[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant "
    "roles are supported!') }}{% endif %}{% endfor %}";

// google/gemma-7b-it, tokenizer_config.json.
const char* kGemma =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role "
    "not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') "
    "!= (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}"
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
    "'<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}";

TEST(ChatTemplateReal, Qwen25) {
  const std::string out = ChatTemplate(kQwen25).apply(kConversation, true, "", "<|im_end|>");
  EXPECT_EQ(out,
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  // No system message: Qwen's default one; no generation prompt.
  EXPECT_EQ(ChatTemplate(kQwen25).apply({{"user", "Hi!"}}, false, "", ""),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n");
}

TEST(ChatTemplateReal, Qwen25Tools) {
  const Json vars = Json::parse(R"({
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather",
                                          "arguments": {"city": "Paris", "unit": "c"}}}]},
      {"role": "tool", "content": "{\"t\": 21}"},
      {"role": "tool", "content": "sunny"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
              {"type": "object", "required": ["city"], "n": 1.5, "ok": true, "x": null}}}],
    "add_generation_prompt": true
  })");
  EXPECT_EQ(render(kQwen25, vars),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the "
            "user query.\n\nYou are provided with function signatures within <tools></tools> "
            "XML tags:\n<tools>\n"
            R"({"type": "function", "function": {"name": "get_weather", "parameters": )"
            R"({"type": "object", "required": ["city"], "n": 1.5, "ok": true, "x": null}}})"
            "\n</tools>\n\nFor each function call, return a json object with function name and "
            "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
            "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n"
            R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}})"
            "\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"t\": 21}\n</tool_response>\n"
            "<tool_response>\nsunny\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateReal, Llama3) {
  EXPECT_EQ(ChatTemplate(kLlama3).apply(kConversation, true, "<|begin_of_text|>", "<|eot_id|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse."
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateReal, MistralAlternationAndRaise) {
  const std::vector<ChatMessage> no_system(kConversation.begin() + 1, kConversation.end());
  EXPECT_EQ(ChatTemplate(kMistral).apply(no_system, true, "<s>", "</s>"),
            "<s>[INST] Hi! [/INST]Hello.</s>[INST] 2+2? [/INST]");
  try {
    ChatTemplate(kMistral).apply(kConversation, true, "<s>", "</s>");
    FAIL() << "a system message must raise";
  } catch (const tzero::Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Conversation roles must alternate user/assistant/user/assistant/..."),
              std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplateReal, Gemma) {
  const std::vector<ChatMessage> no_system(kConversation.begin() + 1, kConversation.end());
  EXPECT_EQ(ChatTemplate(kGemma).apply(no_system, true, "<bos>", "<eos>"),
            "<bos><start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\nHello."
            "<end_of_turn>\n<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_NE(error_of(kGemma, {{"messages", {{{"role", "system"}, {"content", "x"}}}}})
                .find("System role not supported"),
            std::string::npos);
}

// --- Named formats (--chat-template NAME) -------------------------------------------------

std::string named(const std::string& name, const std::string& bos, const std::string& eos,
                  bool gen = true) {
  return ChatTemplate(tzero::named_chat_template(name)).apply(kConversation, gen, bos, eos);
}

TEST(ChatTemplateNamed, AllFormats) {
  EXPECT_EQ(named("llama2", "<s>", "</s>"),
            "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi! [/INST] Hello. </s>"
            "<s>[INST] 2+2? [/INST]");
  EXPECT_EQ(named("llama3", "<|begin_of_text|>", "<|end_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse."
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(named("chatml", "", ""),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(named("mistral", "<s>", "</s>"),
            "<s>[INST] You are terse.\n\nHi! [/INST]Hello.</s>[INST] 2+2? [/INST]");
  EXPECT_EQ(named("phi3", "<s>", "<|endoftext|>"),
            "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi!<|end|>\n<|assistant|>\nHello."
            "<|end|>\n<|user|>\n2+2?<|end|>\n<|assistant|>\n");
  EXPECT_EQ(named("phi3", "<s>", "<|endoftext|>", false),
            "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi!<|end|>\n<|assistant|>\nHello."
            "<|end|>\n<|user|>\n2+2?<|end|>\n<|endoftext|>");
  EXPECT_EQ(named("gemma", "<bos>", "<eos>"),
            "<bos><start_of_turn>user\nYou are terse.\n\nHi!<end_of_turn>\n<start_of_turn>model\n"
            "Hello.<end_of_turn>\n<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(named("deepseek", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
            "<｜begin▁of▁sentence｜>You are terse.\n\nUser: Hi!\n\nAssistant: Hello."
            "<｜end▁of▁sentence｜>User: 2+2?\n\nAssistant:");
  EXPECT_EQ(tzero::chat_template_names().size(), 7u);
  try {
    tzero::named_chat_template("vicuna");
    FAIL();
  } catch (const tzero::Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama2, llama3, chatml"), std::string::npos);
  }
}

// --- The Jinja subset ----------------------------------------------------------------------

TEST(ChatTemplateJinja, LoopVariables) {
  const Json vars = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ x }}"
                   "{% if loop.first %}F{% endif %}{% if loop.last %}L{{ loop.length }}{% endif %}"
                   ",{% endfor %}",
                   vars),
            "10aF,21b,32cL3,");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ loop.index }}{{ x }}{% endfor %}", vars),
            "1a2c");
  EXPECT_EQ(render("{% for x in [] %}no{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
}

TEST(ChatTemplateJinja, SetScopesAndNamespace) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{% endfor %}{{ x }}"),
            "1");
  EXPECT_EQ(
      render("{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}"
             "{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}"),
      "6 0123");
  EXPECT_NE(error_of("{% set d = {} %}{% set d.x = 1 %}").find("not a namespace"),
            std::string::npos);
}

TEST(ChatTemplateJinja, WhitespaceControl) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("a  {{- 'x' -}}  c"), "axc");
  EXPECT_EQ(render("a {# comment #} b{#- x -#} c"), "a  bc");
  // trim_blocks and lstrip_blocks, as transformers renders.
  EXPECT_EQ(
      render("{% for x in [1, 2] %}\n    {% if x %}\n{{ x }}\n    {% endif %}\n{% endfor %}\n"),
      "1\n2\n");
  EXPECT_EQ(render("  {{ 1 }}\n"), "  1\n");  // expressions keep their whitespace
}

TEST(ChatTemplateJinja, ExpressionsAndOperators) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }}"
                   " {{ 2 ** 10 }} {{ 'a' ~ 1 ~ none }}"),
            "7 3 -4 1 2 3.5 1024 a1None");
  EXPECT_EQ(render("{{ 1 < 2 and 'b' > 'a' }} {{ not 1 == 1 }} {{ 'ell' in 'hello' }} "
                   "{{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 0 or 'x' }} {{ '' and 1 }}"),
            "True False True True True x ");
  EXPECT_EQ(
      render("{{ 'yes' if 1 > 2 else 'no' }} {{ [1, 'a', none, true, 1.0] }} {{ {'a': 'b'} }}"),
      "no [1, 'a', None, True, 1.0] {'a': 'b'}");
  EXPECT_EQ(
      render("{{ xs[1] }} {{ xs[-1] }} {{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ 'abc'[1:] }}",
             {{"xs", {1, 2, 3}}}),
      "2 3 [2, 3] [1, 2] [3, 2, 1] bc");
  EXPECT_EQ(render("{{ m['role'] }} {{ m.content }} {{ m.missing }}|{{ m.missing is defined }}",
                   {{"m", {{"role", "user"}, {"content", "hi"}}}}),
            "user hi |False");
  EXPECT_EQ(render("{{ 'a\\n\\t\\'b\"' }}"), "a\n\t'b\"");
}

TEST(ChatTemplateJinja, TestsFiltersAndMethods) {
  EXPECT_EQ(render("{{ x is defined }} {{ y is none }} {{ 's' is string }} {{ 1 is number }} "
                   "{{ {} is mapping }} {{ 4 is even }} {{ 9 is divisibleby 3 }} "
                   "{{ y is not none }} {{ 1 is integer }} {{ 1.5 is float }}",
                   {{"y", nullptr}}),
            "False True True True True True True False True True");
  EXPECT_EQ(render("{{ '  a b  ' | trim }}|{{ 'aB' | upper }}{{ 'aB' | lower }}|"
                   "{{ [1, 2] | length }}{{ 'héllo' | length }}|{{ x | default('d') }}|"
                   "{{ '' | default('e', true) }}|{{ [3, 4] | first }}{{ [3, 4] | last }}|"
                   "{{ ['a', 'b'] | join(', ') }}|{{ 'aXbX' | replace('X', '-') }}|"
                   "{{ 'hello world' | title }}|{{ [2, 1, 2] | unique | list }}|"
                   "{{ [3, 1, 2] | sort }}|{{ [1, 2] | reverse | list }}|{{ '5' | int + 1 }}"),
            "a b|ABab|25|d|e|34|a, b|a-b-|Hello World|[2, 1]|[1, 2, 3]|[2, 1]|6");
  EXPECT_EQ(
      render(
          "{{ {'a': [1, 'x\"'], 'b': none} | tojson }}|{{ [1, {'k': true}] | tojson(indent=2) }}"),
      "{\"a\": [1, \"x\\\"\"], \"b\": null}|[\n  1,\n  {\n    \"k\": true\n  }\n]");
  EXPECT_EQ(render("{{ ' x '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'abc'.startswith('ab') }}"
                   "{{ 'abc'.endswith('bc') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|"
                   "{{ 'a b c'.split(' ', 1) }}|{{ 'ab'.upper() }}|{{ d.get('k', 'none') }}"
                   "{{ d.keys() | list }}",
                   {{"d", {{"q", 1}}}}),
            "x|a|TrueTrue|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|AB|none['q']");
  const Json msgs = {{"ms",
                      {{{"role", "user"}, {"content", "a"}},
                       {{"role", "assistant"}, {"content", "b"}},
                       {{"role", "user"}, {"content", "c"}}}}};
  EXPECT_EQ(render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | "
                   "join('+') }}|{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}",
                   msgs),
            "a+c|1");
}

// --- Errors: never a crash or a silent wrong render ---------------------------------------

TEST(ChatTemplateErrors, UnsupportedConstructsNameThemselvesAndTheirPlace) {
  std::string e = error_of("hello\n{% macro greet(name) %}hi{% endmacro %}");
  EXPECT_NE(e.find("unsupported tag '{% macro %}'"), std::string::npos) << e;
  EXPECT_NE(e.find("line 2, column 4"), std::string::npos) << e;
  e = error_of("{{ messages | wordwrap }}");
  EXPECT_NE(e.find("unsupported filter 'wordwrap'"), std::string::npos) << e;
  EXPECT_NE(e.find("line 1, column 15"), std::string::npos) << e;
  e = error_of("{% if x is prime %}{% endif %}");
  EXPECT_NE(e.find("unsupported test 'prime'"), std::string::npos) << e;
  e = error_of("{{ 'a{}'.format(1) }}");
  EXPECT_NE(e.find("unsupported method 'format()' on a 'str'"), std::string::npos) << e;
  e = error_of("{{ strftime_now('%Y') }}");
  EXPECT_NE(e.find("unsupported function 'strftime_now()'"), std::string::npos) << e;
  e = error_of("{% set x %}block{% endset %}");
  EXPECT_NE(e.find("block assignment"), std::string::npos) << e;
  e = error_of("{% for x in xs %}{% break %}{% endfor %}");
  EXPECT_NE(e.find("unsupported tag '{% break %}'"), std::string::npos) << e;
  for (const char* bad :
       {"{% if x %}never closed", "{{ 'unterminated }}", "{{ 1 + }}", "{% endfor %}", "{{ x.y.z }}",
        "{{ 'a' + 1 }}", "{{ none + 1 }}", "{{ 1 / 0 }}", "{% for x in 5 %}{% endfor %}",
        "{{ (1, 2 }}", "{{ [1][0:1:0] }}"}) {
    const std::string m = error_of(bad);
    EXPECT_EQ(m.rfind("chat template: line ", 0), 0u) << bad << " -> " << m;
  }
  e = error_of("{{ raise_exception('Only user and assistant roles are supported!') }}");
  EXPECT_NE(e.find("Only user and assistant roles are supported!"), std::string::npos) << e;
}

}  // namespace
