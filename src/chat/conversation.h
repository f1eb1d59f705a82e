// The one path from a conversation to a prompt. The template is chosen by the one rule
// (chat/template_choice.h: a named format or file, else the model's tokenizer.chat_template,
// else chatml), parsed once, and rendered with the model's BOS and EOS texts and the
// assistant's turn opened. `tzero chat`, `tzero run --messages`, the engine (and so `tzero
// serve` and the Python package) render through it; tool-calling prompts add their tools to the
// same template's variables (server/tool_calls.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "chat/template_choice.h"

namespace tzero {

struct ConversationTemplate {
  ChatTemplateChoice choice;
  ChatTemplate parsed;
  std::string bos_text, eos_text;  // {{ bos_token }}, {{ eos_token }}: the model's texts

  // The conversation, ending with the assistant's turn opened.
  std::string render(const std::vector<ChatMessage>& messages) const {
    return parsed.apply(messages, true, bos_text, eos_text);
  }
};

// model_template: the file's tokenizer.chat_template ("" when none); option: a named format or
// a template file ("" for the model's). Throws tzero::Error for an unknown option or a
// template that cannot be parsed, naming where it came from (`where`: the model file's path).
ConversationTemplate load_conversation_template(std::string_view model_template,
                                                const std::string& option, std::string bos_text,
                                                std::string eos_text,
                                                const std::string& where = "the model");

}  // namespace tzero
