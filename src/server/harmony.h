// gpt-oss's replies in the harmony format, split as llama.cpp's server and vLLM split them:
//   <|channel|>analysis<|message|>...<|end|>            -> reasoning_content
//   <|start|>assistant<|channel|>final<|message|>...    -> content (also commentary without a
//                                                          recipient: a preamble)
//   ...<|channel|>commentary to=functions.NAME [<|constrain|>json]<|message|>{...}<|call|>
//                                                       -> tool call NAME with those arguments
// Messages to other recipients (built-in tools) are dropped. The splitter is fed one token at a
// time: `marker` is the token's name when it is one of harmony's control tokens (<|start|>,
// <|channel|>, <|message|>, <|constrain|>, <|end|>, <|call|>, <|return|>; they render as no
// text), else "" with the token's text. A reply that never opens a message is all content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace tzero {
class Engine;
}

namespace tzero::server {

class HarmonySplitter {
 public:
  explicit HarmonySplitter(std::string id_prefix) : id_prefix_(std::move(id_prefix)) {}
  struct Piece {
    std::string reasoning, content;
  };
  Piece push(std::string_view marker, const std::string& text);
  // The end of the reply: text still held (a header with no message becomes content).
  Piece finish();
  // Tool calls completed since the last take().
  std::vector<ToolCall> take();

 private:
  enum class Dest { reasoning, content, call, drop };
  void open_message();
  void close_message();
  std::string id_prefix_;
  bool in_header_ = true, any_message_ = false;
  std::string header_;
  std::string plain_;  // every text before the first message (the reply if none opens)
  Dest dest_ = Dest::content;
  std::string call_name_, call_args_;
  std::vector<ToolCall> calls_;
  int n_calls_ = 0;
};

// Whether the model's vocabulary is harmony's (<|channel|> and <|message|> are single tokens).
bool is_harmony(const tzero::Engine& engine);
// The token's harmony control name, or "" (any other token).
std::string harmony_marker(const tzero::Engine& engine, int32_t token);

}  // namespace tzero::server
