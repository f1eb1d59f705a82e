// Chat prompts on the command line (cli/chat_prompt.h).
#include "cli/chat_prompt.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "cli/commands.h"
#include "server/openai_request.h"

namespace tzero::cli {

ConversationTemplate load_chat_template(const GgufFile& file, const Vocab& vocab,
                                        const std::string& option) {
  return load_conversation_template(file.get_string("tokenizer.chat_template"), option,
                                    special_token_text(vocab, vocab.bos()),
                                    special_token_text(vocab, vocab.eos()), file.path());
}

std::string special_token_text(const Vocab& vocab, int id) {
  return id >= 0 ? std::string(vocab.text(id)) : std::string();
}

std::string render_chat_file(const GgufFile& file, const Vocab& vocab, const std::string& path,
                             const std::string& template_option) {
  nlohmann::json in;
  try {
    in = parse_json_bounded(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + excerpt(e.what()));
  }
  if (in.is_object() && in.contains("messages")) in = in["messages"];
  check(in.is_array(), path + ": want a JSON array of messages or an object with \"messages\"");
  std::vector<ChatMessage> messages;
  try {
    const server::OpenAiRequest r =
        server::parse_request(server::Endpoint::chat, nlohmann::json{{"messages", in}}.dump());
    for (const ChatTurn& t : r.messages) messages.push_back({t.role, t.content});
  } catch (const server::ApiError& e) {
    throw Error(path + ": " + e.what());
  }
  const ConversationTemplate tmpl = load_chat_template(file, vocab, template_option);
  if (tmpl.choice.fallback)
    std::fprintf(stderr, "tzero: %s\n", chat_template_fallback_note(file.path()).c_str());
  return tmpl.render(messages);
}

}  // namespace tzero::cli
