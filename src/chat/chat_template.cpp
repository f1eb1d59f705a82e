// The public face of the chat-template interpreter (chat/chat_template.h): parse once,
// render with the evaluator (chat/chat_template_eval.h).
#include "chat/chat_template.h"

#include "base/error.h"
#include "chat/chat_template_eval.h"

namespace tzero {

ChatTemplate::ChatTemplate(std::string source)
    : source_(std::move(source)), program_(jinja::parse(source_)) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json& variables) const {
  check(variables.is_object(), "chat template: the variables must be a JSON object");
  return jinja::Evaluator(*program_).run(jinja::from_json(variables));
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token) const {
  nlohmann::ordered_json vars;
  vars["messages"] = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages)
    vars["messages"].push_back({{"role", m.role}, {"content", m.content}});
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["bos_token"] = bos_token;
  vars["eos_token"] = eos_token;
  return render(vars);
}

}  // namespace tzero
