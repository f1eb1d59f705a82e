// Chat prompts for tzero run (cli/chat_prompt.h).
#include "cli/chat_prompt.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "server/openai_request.h"

namespace tzero::cli {

std::string render_chat_file(const GgufFile& file, const Vocab& vocab, const std::string& path,
                             const std::string& template_name) {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
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
  std::string source = file.get_string("tokenizer.chat_template");
  if (!template_name.empty())
    source = named_chat_template(template_name);
  else if (source.empty())
    source = named_chat_template("chatml");
  auto special = [&](int id) { return id >= 0 ? std::string(vocab.text(id)) : std::string(); };
  return ChatTemplate(source).apply(messages, true, special(vocab.bos()), special(vocab.eos()));
}

}  // namespace tzero::cli
