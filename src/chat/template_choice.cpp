// The chat template rule (chat/template_choice.h).
#include "chat/template_choice.h"

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "chat/chat_template.h"

namespace tzero {

namespace {

bool is_named(const std::string& name) {
  for (const std::string& n : chat_template_names())
    if (n == name) return true;
  return false;
}

}  // namespace

ChatTemplateChoice choose_chat_template(std::string_view file_template, const std::string& option) {
  ChatTemplateChoice c;
  if (!option.empty()) {
    if (is_named(option)) {
      c.source = named_chat_template(option);
      c.label = option;
      return c;
    }
    std::ifstream in(option, std::ios::binary);
    if (!in) {
      std::string names;
      for (const auto& n : chat_template_names()) names += (names.empty() ? "" : ", ") + n;
      throw Error("unknown chat template '" + option + "' (named formats: " + names +
                  "; or a readable Jinja template file)");
    }
    std::ostringstream text;
    text << in.rdbuf();
    c.source = text.str();
    check(!c.source.empty(), option + ": the chat template file is empty");
    c.label = "file " + option;
    return c;
  }
  if (!file_template.empty()) {
    c.source = std::string(file_template);
    c.label = "tokenizer.chat_template";
    return c;
  }
  c.source = named_chat_template("chatml");
  c.label = "chatml (fallback: the file has none)";
  c.fallback = true;
  return c;
}

std::string chat_template_fallback_note(const std::string& model_path) {
  return model_path +
         ": the file has no chat template (tokenizer.chat_template); using chatml "
         "(--chat-template NAME|FILE chooses another)";
}

}  // namespace tzero
