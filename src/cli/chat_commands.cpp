// The commands of tzero chat (cli/chat_commands.h).
#include "cli/chat_commands.h"

namespace tzero::cli {

ChatInput parse_chat_input(const std::string& line) {
  if (line.empty()) return {ChatInput::Kind::empty, ""};
  if (line[0] != '/') return {ChatInput::Kind::message, line};
  if (line.rfind("//", 0) == 0) return {ChatInput::Kind::message, line.substr(1)};
  // The command is the first word; trailing spaces are forgiven ("/exit ").
  const size_t end = line.find_first_of(" \t");
  const std::string word = line.substr(0, end);
  const bool rest_blank =
      end == std::string::npos || line.find_first_not_of(" \t", end) == std::string::npos;
  if (rest_blank) {
    if (word == "/help" || word == "/?") return {ChatInput::Kind::help, ""};
    if (word == "/reset") return {ChatInput::Kind::reset, ""};
    if (word == "/exit" || word == "/quit") return {ChatInput::Kind::exit, ""};
  }
  return {ChatInput::Kind::unknown, line};
}

const char* chat_help_text() {
  return "commands:\n"
         "  /help          this list\n"
         "  /reset         start the conversation again (the --system message stays)\n"
         "  /exit, /quit   end the chat (so does Ctrl+D)\n"
         "  //text         send \"/text\" to the model (a line starting with one / is a "
         "command)\n"
         "Ctrl+C stops the reply being written (what was written stays in the conversation);\n"
         "Ctrl+C at the prompt ends the chat.\n";
}

}  // namespace tzero::cli
