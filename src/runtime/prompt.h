// The one BOS rule, for every caller that turns text into a prompt (tzero run, tzero chat, the
// engine's submit, the server's completions and chat):
//   a BOS token goes first iff the caller allows it (not `--no-bos`), the vocabulary asks for
//   it (tokenizer.ggml.add_bos_token, Vocab::add_bos()), and the text does not already begin
//   with the BOS text while special texts are parsed (a chat template that writes bos_token
//   itself gets no second BOS; with parse_special off "<s>" is plain text, not a BOS).
// An empty result becomes [BOS] when the vocabulary has one (something to decode from).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace tzero {

// Whether the rule puts a BOS in front of `text`.
bool prompt_wants_bos(const Vocab& vocab, std::string_view text, bool parse_special,
                      bool allow_bos = true);

// A completion prompt: BOS by the rule; EOS too when the vocabulary asks (add_eos_token), as
// Vocab::tokenize(text, true, ...) adds it.
std::vector<int32_t> tokenize_prompt(const Vocab& vocab, std::string_view text, bool parse_special,
                                     bool allow_bos = true);

// A rendered chat prompt: special texts parsed, BOS by the rule, never an EOS (the reply
// follows it).
std::vector<int32_t> tokenize_chat_prompt(const Vocab& vocab, std::string_view rendered);

}  // namespace tzero
