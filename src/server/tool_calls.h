// Tool calls (OpenAI function calling) in chat completions: the request's `tools` and
// `tool_choice`, the prompt they go into, the grammar that makes a call valid, and the reply
// split into `content` and `tool_calls` (docs/SERVER.md, "Tool calls").
//
// Two formats, chosen from the chat template:
//   hermes  <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>, one block per call
//           (Qwen 2.5 / 3, Hermes and other ChatML models; also the fallback for a template
//           that does not mention tools, with the tools described in the system message);
//   llama3  {"name": NAME, "parameters": {...}} as the whole reply (Llama 3.1+ JSON calls; a
//           template with <|start_header_id|> and no <tool_call>).
// tool_choice "required" or {"type": "function", "function": {"name": N}}: the grammar makes
// the whole reply calls (of that function); "auto": free text, or a call wherever the reply
// starts one (hermes: at a <tool_call>; llama3: a reply starting with "{"), the call itself
// held to the grammar; "none": free text, no call parsed. A call's arguments follow the tool's
// `parameters` schema (grammar/json_schema.h).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tzero::server {

enum class ToolFormat { hermes, llama3 };
enum class ToolChoice { none, automatic, required, named };

struct Tool {
  std::string name, description;
  nlohmann::ordered_json parameters;  // a JSON schema (an object), or null
};

struct ToolRequest {
  std::vector<Tool> tools;
  nlohmann::ordered_json tools_json;  // the tools as given (what templates render)
  ToolChoice choice = ToolChoice::automatic;
  std::string named;  // ToolChoice::named: the function
  bool parallel = true;
  ToolFormat format = ToolFormat::hermes;
};

// The tools of a chat body (nullptr without `tools` or with an empty list). Throws ApiError.
std::shared_ptr<ToolRequest> parse_tools(const nlohmann::ordered_json& body);

ToolFormat tool_format_of(const std::string& template_source);

// The prompt text of a conversation with tools or tool messages (`messages` as given: role
// "tool" with tool_call_id, assistant messages with tool_calls). A template that renders
// tools gets them as `tools`; otherwise the tools are described in the system message and
// tool turns are written as text (Hermes' <tool_response> blocks).
std::string render_tool_prompt(const std::string& template_source,
                               const nlohmann::ordered_json& messages, const ToolRequest* tools,
                               const std::string& bos_token, const std::string& eos_token);

// The GBNF grammar of the reply under tool_choice ("" for none).
std::string tool_grammar(const ToolRequest& t);

struct ToolCall {
  std::string id, name, arguments;  // arguments: JSON text
};

// Splits reply text, as it streams, into content and calls.
class ToolCallParser {
 public:
  ToolCallParser(ToolFormat format, std::string id_prefix);
  // Content released by this text (text that could still be the start of a call is held).
  std::string push(const std::string& text);
  // Calls complete since the last call of take().
  std::vector<ToolCall> take();
  // The end of the reply: content still held (an unfinished call comes back as content).
  std::string finish();
  bool any_call() const { return n_calls_ > 0; }

 private:
  void scan();
  ToolFormat format_;
  std::string id_prefix_;
  std::string pending_;  // held-back text
  bool in_calls_ = false, content_seen_ = false;
  int n_calls_ = 0;
  std::vector<ToolCall> ready_;
};

}  // namespace tzero::server
