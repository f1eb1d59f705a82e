// Chat prompts on the command line: the chat template a command uses, and
// `tzero run --messages FILE`.
//
// load_chat_template applies the one rule (chat/template_choice.h: --chat-template NAME|FILE,
// else the model's tokenizer.chat_template, else chatml) and parses the template, so a template
// tzero cannot run is a load error naming where it came from. `tzero chat`, `chat --render`
// and `run --messages` use it; `tzero serve` and the engine apply the same rule.
//
// render_chat_file: a conversation read from a JSON file, rendered exactly as `tzero serve`
// renders a /v1/chat/completions request, so its answer can be reproduced on the command line
// (docs/SERVER.md, "Reproducing an answer with tzero run").
//   FILE: a JSON array of messages, or an object with "messages" (a whole chat request body
//   works as is; its other fields are not read: give the sampling as flags).
// The messages go through the server's own parsing (roles system, developer as system, user,
// assistant; content a string or text parts), then the chat template, with the assistant's
// turn opened. Throws tzero::Error naming the file.
#pragma once

#include <string>

#include "chat/conversation.h"
#include "format/gguf.h"
#include "tokenizer/vocab.h"

namespace tzero::cli {

// The model's conversation template (chat/conversation.h) with its BOS and EOS texts. Throws
// tzero::Error for an unknown name, an unreadable file or a template that cannot be run.
ConversationTemplate load_chat_template(const GgufFile& file, const Vocab& vocab,
                                        const std::string& option);

// The vocabulary's text of a special token ("" for -1): bos_token and eos_token of a template.
std::string special_token_text(const Vocab& vocab, int id);

// The rendered prompt of the conversation in `path`; prints chat_template_fallback_note on
// stderr when the model has no template.
std::string render_chat_file(const GgufFile& file, const Vocab& vocab, const std::string& path,
                             const std::string& template_option);

}  // namespace tzero::cli
