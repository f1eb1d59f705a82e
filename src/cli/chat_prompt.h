// `tzero run --messages FILE`: a conversation read from a JSON file, rendered exactly as
// `tzero serve` renders a /v1/chat/completions request, so its answer can be reproduced on the
// command line (docs/SERVER.md, "Reproducing an answer with tzero run").
//   FILE: a JSON array of messages, or an object with "messages" (a whole chat request body
//   works as is; its other fields are not read: give the sampling as flags).
// The messages go through the server's own parsing (roles system, developer as system, user,
// assistant; content a string or text parts), then the chat template: the named format, else
// the model's tokenizer.chat_template, else chatml (the server's rule), with the assistant's
// turn opened. Throws tzero::Error naming the file.
#pragma once

#include <string>

#include "format/gguf.h"
#include "tokenizer/vocab.h"

namespace tzero::cli {

std::string render_chat_file(const GgufFile& file, const Vocab& vocab, const std::string& path,
                             const std::string& template_name);

}  // namespace tzero::cli
