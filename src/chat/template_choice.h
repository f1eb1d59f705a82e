// Which chat template a command uses: one rule for `tzero chat` (and `chat --render`),
// `tzero run --messages`, `tzero serve`, `tzero lock`/`verify` and the engine.
//   1. `--chat-template NAME|FILE`: a named format (chat_template_names(); a name wins over a
//      file of the same name), else the Jinja source read from that file;
//   2. else the model file's tokenizer.chat_template;
//   3. else chatml, and the command says so once (a stderr line, the chat banner, the serve log).
#pragma once

#include <string>
#include <string_view>

namespace tzero {

struct ChatTemplateChoice {
  std::string source;     // the Jinja source to parse (chat/chat_template.h)
  std::string label;      // for the user: "tokenizer.chat_template", "llama3", "file t.jinja", ...
  bool fallback = false;  // the model file has no template: chatml in its place
};

// `file_template` is the model's tokenizer.chat_template ("" when it has none); `option` the
// --chat-template value ("" when not given). Throws tzero::Error for an option that is neither a
// named format nor a readable file (the message lists the names).
ChatTemplateChoice choose_chat_template(std::string_view file_template, const std::string& option);

// The line a command prints (once) when choice.fallback is set.
std::string chat_template_fallback_note(const std::string& model_path);

}  // namespace tzero
