// The commands of `tzero chat`: a line that starts with "/" is a command, never text for the
// model. "//" at the start sends the rest with one "/" (so "//etc" sends "/etc").
//   /help          lists the commands
//   /reset         starts the conversation again (the --system message stays)
//   /exit, /quit   end the chat (exit status 0), as EOF does
// Anything else after "/" is an unknown command: a message says so and nothing is sent.
#pragma once

#include <string>

namespace tzero::cli {

struct ChatInput {
  enum class Kind { empty, message, help, reset, exit, unknown };
  Kind kind = Kind::empty;
  std::string text;  // message: the user's text; unknown: the command as typed
};

ChatInput parse_chat_input(const std::string& line);

// The text /help prints (several lines, each ending with "\n").
const char* chat_help_text();

}  // namespace tzero::cli
