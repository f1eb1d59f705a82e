// The named chat formats of `--chat-template NAME` (chat/chat_template.h), written as
// Jinja from each model family's documented prompt format (model cards and the templates its
// authors publish). Where a family has no system role (Mistral, Gemma), the system message is
// put at the start of the first user message, followed by a blank line.
#include <map>

#include "base/error.h"
#include "chat/chat_template.h"

namespace tzero {

namespace {

// Splits off a leading system message: `system` ('' when none) and `loop_messages`.
#define TZ_SPLIT_SYSTEM                                                                 \
  "{%- if messages and messages[0]['role'] == 'system' -%}"                             \
  "{%- set system = messages[0]['content'] -%}{%- set loop_messages = messages[1:] -%}" \
  "{%- else -%}{%- set system = '' -%}{%- set loop_messages = messages -%}{%- endif -%}\n"

const std::map<std::string, std::string>& formats() {
  static const std::map<std::string, std::string> f = {
      // Llama 2 chat (meta-llama/Llama-2-*-chat): <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n
      // {user} [/INST] {assistant} </s><s>[INST] {user} [/INST]
      {"llama2", TZ_SPLIT_SYSTEM R"(
{%- for message in loop_messages -%}
  {%- if message['role'] == 'user' -%}
    {%- set content = message['content'] | trim -%}
    {%- if loop.first and system -%}
      {%- set content = '<<SYS>>\n' + system | trim + '\n<</SYS>>\n\n' + content -%}
    {%- endif -%}
    {{- bos_token + '[INST] ' + content + ' [/INST]' -}}
  {%- elif message['role'] == 'assistant' -%}
    {{- ' ' + message['content'] | trim + ' ' + eos_token -}}
  {%- endif -%}
{%- endfor -%})"},
      // Llama 3 / 3.1 instruct: <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>
      // \n\n{content}<|eot_id|>...<|start_header_id|>assistant<|end_header_id|>\n\n
      {"llama3", R"(
{{- bos_token -}}
{%- for message in messages -%}
  {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' -}}
  {{- message['content'] | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%})"},
      // ChatML (Qwen, Yi, OpenHermes, ...): <|im_start|>{role}\n{content}<|im_end|>\n
      {"chatml", R"(
{%- for message in messages -%}
  {{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
{%- endif -%})"},
      // Mistral instruct v0.1/v0.2: <s>[INST] {user} [/INST]{assistant}</s>[INST] {user} [/INST]
      {"mistral", TZ_SPLIT_SYSTEM R"(
{{- bos_token -}}
{%- for message in loop_messages -%}
  {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
    {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') -}}
  {%- endif -%}
  {%- if message['role'] == 'user' -%}
    {%- if loop.first and system -%}
      {%- set content = system + '\n\n' + message['content'] -%}
    {%- else -%}
      {%- set content = message['content'] -%}
    {%- endif -%}
    {{- '[INST] ' + content + ' [/INST]' -}}
  {%- else -%}
    {{- message['content'] + eos_token -}}
  {%- endif -%}
{%- endfor -%})"},
      // Phi-3 (microsoft/Phi-3-mini-4k-instruct): <|{role}|>\n{content}<|end|>\n ...
      // <|assistant|>\n
      {"phi3", R"(
{%- for message in messages -%}
  {%- if message['role'] in ['system', 'user', 'assistant'] -%}
    {{- '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|assistant|>\n' -}}
{%- else -%}
  {{- eos_token -}}
{%- endif -%})"},
      // Gemma instruct: <bos><start_of_turn>user\n{content}<end_of_turn>\n
      // <start_of_turn>model\n{content}<end_of_turn>\n ... <start_of_turn>model\n
      {"gemma", TZ_SPLIT_SYSTEM R"(
{{- bos_token -}}
{%- for message in loop_messages -%}
  {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
  {%- set prefix = system | trim + '\n\n' if loop.first and system else '' -%}
  {{- '<start_of_turn>' + role + '\n' + prefix + message['content'] | trim + '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<start_of_turn>model\n' -}}
{%- endif -%})"},
      // DeepSeek LLM chat / DeepSeek-V2: <｜begin▁of▁sentence｜>{system}\n\nUser: {user}\n\n
      // Assistant: {assistant}<｜end▁of▁sentence｜>User: {user}\n\nAssistant:
      {"deepseek", R"(
{{- bos_token -}}
{%- for message in messages -%}
  {%- if message['role'] == 'user' -%}
    {{- 'User: ' + message['content'] + '\n\n' -}}
  {%- elif message['role'] == 'assistant' -%}
    {{- 'Assistant: ' + message['content'] + eos_token -}}
  {%- elif message['role'] == 'system' -%}
    {{- message['content'] + '\n\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- 'Assistant:' -}}
{%- endif -%})"},
  };
  return f;
}

}  // namespace

const std::vector<std::string>& chat_template_names() {
  static const std::vector<std::string> names = {"llama2", "llama3", "chatml",  "mistral",
                                                 "phi3",   "gemma",  "deepseek"};
  return names;
}

const std::string& named_chat_template(const std::string& name) {
  auto it = formats().find(name);
  if (it == formats().end()) {
    std::string list;
    for (const auto& n : chat_template_names()) list += (list.empty() ? "" : ", ") + n;
    throw Error("unknown chat template '" + name + "' (named formats: " + list + ")");
  }
  return it->second;
}

}  // namespace tzero
