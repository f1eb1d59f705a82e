// POST /tokenize and POST /detokenize in llama.cpp server's shape (docs/SERVER.md):
//   /tokenize   {content, add_special = false, parse_special = true, with_pieces = false}
//               -> {"tokens": [id, ...]}, or with with_pieces [{"id": id, "piece": p}, ...]
//               where p is the token's text as a string when it is valid UTF-8, else its
//               bytes as an array of integers (a byte-fallback token, half a character).
//               add_special: the BOS (and EOS) the vocabulary asks for, by the one BOS rule
//               (runtime/prompt.h), so {add_special: true, parse_special: false} gives the
//               tokens /v1/completions makes of the same prompt string.
//               vLLM's shape {prompt, add_special_tokens = true} is answered as vLLM does,
//               {"count", "max_model_len", "tokens"} (lm-evaluation-harness's remote tokenizer
//               sends it with add_special_tokens false).
//   /detokenize {tokens} -> {"content": text, "prompt": text} (llama.cpp's name and vLLM's),
//               control tokens written by name (as llama.cpp).
//   GET /tokenizer_info -> vLLM's {"bos_token", "eos_token", "pad_token", "chat_template",
//               "model_max_length", ...}: the special tokens' texts (null when the model has
//               none), so a harness can tokenize with the server instead of downloading one.
// `model` is accepted and ignored; another field, a wrong type, a missing field or a token id
// outside the vocabulary is an ApiError 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"
#include "tzero/engine.h"

namespace tzero::server {

nlohmann::json tokenize_response(const tzero::Engine& engine, const std::string& body);
nlohmann::json detokenize_response(const tzero::Engine& engine, const std::string& body);
nlohmann::json tokenizer_info_response(const tzero::Engine& engine);

}  // namespace tzero::server
