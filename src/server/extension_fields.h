// llama.cpp's and vLLM's extension fields of POST /v1/completions and /v1/chat/completions
// (docs/SERVER.md, "Extension fields"): the fields their clients send routinely, which OpenAI's
// API does not have. Each one is either
//   honoured: mapped onto what tzero does (n_predict is max_tokens, repeat_penalty is
//     repetition_penalty, n_probs is logprobs, stop_token_ids are stop tokens, ...);
//   ignored: accepted (its type checked) and without effect, because tzero always does what it
//     asks (cache_prompt: the prefix cache is always on) or it has no meaning here (id_slot);
//   default-only: accepted at the value that leaves the feature off (typical_p 1, mirostat 0,
//     use_beam_search false, ...); another value is a 400 naming the field, since tzero does not
//     have the feature.
// Fields of neither list stay a 400 unknown_parameter (server/openai_request.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_request.h"

namespace tzero::server {

// Whether `name` is one of the extension fields `ep` accepts.
bool is_extension_field(const std::string& name, Endpoint ep);

// Applies the extension fields of `body` to r, after OpenAI's own fields are parsed (so it sees
// r.max_tokens, r.want_logprobs, ...). A field given together with its OpenAI spelling
// (n_predict and max_tokens, repeat_penalty and repetition_penalty, n_probs and logprobs) is a
// 400, as is a value out of range or a default-only field at another value. Throws ApiError.
void parse_extension_fields(const nlohmann::json& body, OpenAiRequest& r);

}  // namespace tzero::server
