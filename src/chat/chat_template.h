// Chat templates: turning a conversation (a list of {role, content} messages) into the prompt
// text a chat model was trained on. Models publish this as a Jinja template in
// tokenizer.chat_template; ChatTemplate is a small interpreter of our own for the subset of
// Jinja that real chat templates use (docs/TOKENIZERS.md, "Chat templates", lists it).
//
// Contract:
//  - It renders the way Hugging Face transformers' apply_chat_template does: Jinja with
//    trim_blocks and lstrip_blocks on, undefined variables empty and false, `tojson` as
//    Python's json.dumps (ensure_ascii off, key order kept).
//  - A template using something outside the subset is refused with a tzero::Error naming the
//    construct and its line and column ("chat template: line 3, column 10: unsupported filter
//    'wordwrap'"); it never renders silently wrong. Unknown tags, filters and tests are refused
//    when the template is parsed; an unsupported method or a type error when it runs.
//  - raise_exception(msg) in a template throws a tzero::Error whose message contains msg.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tzero {

struct ChatMessage {
  std::string role;
  std::string content;
};

namespace jinja {
struct Program;
}

class ChatTemplate {
 public:
  // Parses the template; throws tzero::Error (see above) when it cannot be run.
  explicit ChatTemplate(std::string source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with these top-level variables (an object: messages, add_generation_prompt,
  // bos_token, eos_token, and anything else such as tools). Keys keep their order.
  std::string render(const nlohmann::ordered_json& variables) const;

  // The usual call: messages, add_generation_prompt, bos_token and eos_token.
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    const std::string& bos_token, const std::string& eos_token) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::unique_ptr<jinja::Program> program_;
};

// The named formats for `--chat-template NAME`: llama2, llama3, chatml, mistral, phi3, gemma,
// deepseek. Each is a Jinja template written from the model's documented prompt format.
const std::vector<std::string>& chat_template_names();
// The template source of a named format; throws tzero::Error listing the names when unknown.
const std::string& named_chat_template(const std::string& name);

}  // namespace tzero
