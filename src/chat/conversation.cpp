// The one path from a conversation to a prompt (chat/conversation.h).
#include "chat/conversation.h"

#include "base/error.h"
#include "base/excerpt.h"

namespace tzero {

ConversationTemplate load_conversation_template(std::string_view model_template,
                                                const std::string& option, std::string bos_text,
                                                std::string eos_text, const std::string& where) {
  ChatTemplateChoice choice = choose_chat_template(model_template, option);
  try {
    ChatTemplate parsed(choice.source);
    return {std::move(choice), std::move(parsed), std::move(bos_text), std::move(eos_text)};
  } catch (const Error& e) {
    const std::string from = option.empty() ? where + ": " + choice.label : option;
    // The parser's message quotes the template (text from the file): cut it.
    throw Error(from + ": " + excerpt(e.what(), 2 * kMaxQuotedChars) +
                " (name a format with --chat-template NAME)");
  }
}

}  // namespace tzero
