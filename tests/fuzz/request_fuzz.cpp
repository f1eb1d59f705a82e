// libFuzzer target: the server's whole request parser on arbitrary bytes. The first byte picks
// the route and the formats, the rest is the body:
//   bit 0: /v1/chat/completions (else /v1/completions); bit 1: llama3's tool-call format (else
//   Hermes); bit 2: Qwen2.5's template, which walks tools and calls as values (else chatml,
//   which writes them as text); bit 3: also /v1/embeddings' parser.
// A body runs through what a request meets before the engine: parse_request (fields, extension
// fields, structured output to a compiled grammar, tools), the tool grammar, the prompt the chat
// template renders from the messages (tool calls included), and the reply parser over the body
// as if the model had written it. A body may be refused (ApiError, the 400 a client gets) but
// must never crash, overflow the stack, hang, leak or throw anything else (an exception other
// than ApiError would be a 500). tests/fuzz/run_fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "server/api_error.h"
#include "server/embeddings.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"
#include "unit/real_chat_templates.h"

using namespace tzero::server;

namespace {

void request(uint8_t sel, const std::string& body) {
  const Endpoint ep = (sel & 1) ? Endpoint::chat : Endpoint::completions;
  OpenAiRequest r = parse_request(ep, body);
  if (ep != Endpoint::chat || (!r.tools && !r.tool_turns)) return;
  static const std::string chatml = tzero::named_chat_template("chatml");
  static const std::string qwen = tzero::test::kQwen25;
  const std::string& source = (sel & 4) ? qwen : chatml;
  if (r.tools) {
    r.tools->format = (sel & 2) ? ToolFormat::llama3 : ToolFormat::hermes;
    (void)tool_grammar(*r.tools);
  }
  (void)render_tool_prompt(source, r.chat_messages, r.tools.get(), "<s>", "</s>");
}

void reply(uint8_t sel, const std::string& text) {
  ToolCallParser p((sel & 2) ? ToolFormat::llama3 : ToolFormat::hermes, "call_");
  const size_t half = text.size() / 2;
  (void)p.push(text.substr(0, half));
  (void)p.push(text.substr(half));
  (void)p.finish();
  (void)p.take();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    request(sel, body);
  } catch (const ApiError&) {
    // Refused with a 400: fine.
  }
  if (sel & 8) {
    try {
      (void)parse_embeddings_request(body);
    } catch (const ApiError&) {
    }
  }
  reply(sel, body);
  return 0;
}
