// Parsing and validation of the OpenAI request bodies (POST /v1/completions and
// /v1/chat/completions) into what the engine runs. Every problem is an ApiError (400) naming
// the field: malformed JSON, a wrong type, a missing required field, an unknown field (OpenAI
// rejects unrecognized arguments; known-but-ignored ones such as `user` are accepted), a value
// out of range. llama.cpp's and vLLM's extension fields are server/extension_fields.h's.
// docs/SERVER.md lists the accepted fields.
//
// Two stages: parse_request() needs only the body; resolve_prompt() then needs the engine
// (tokenizer, chat template, context size) to fix the prompt tokens and max_tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/tool_calls.h"
#include "tzero/engine.h"

namespace tzero::server {

enum class Endpoint { completions, chat };

struct OpenAiRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;  // as the client named it; "" when omitted (any name is accepted)

  // The prompts: completions give one or several, each text or token ids (choices
  // [p * n, p * n + n) answer prompt p, as OpenAI numbers them); chat gives messages.
  struct PromptInput {
    std::string text;
    std::vector<int32_t> tokens;  // used when not empty
  };
  std::vector<PromptInput> prompts;
  std::vector<tzero::ChatTurn> messages;

  std::optional<int> max_tokens;  // absent: completions 16, chat the rest of the context
  bool until_context = false;     // llama.cpp's n_predict -1: the rest of the context
  int n = 1;                      // choices; choice i is sampled with seed + i
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<uint64_t> seed;
  // Logprobs: completions `logprobs: N` -> want_logprobs, top_logprobs = N;
  // chat `logprobs: true` (+ `top_logprobs: N`).
  bool want_logprobs = false;
  int top_logprobs = 0;
  // Completions scoring: `echo` (the prompt before the completion; with logprobs, the prompt
  // tokens' logprobs too), vLLM's `prompt_logprobs: N` (-1: absent). Either may come with
  // max_tokens 0 (score only). params.prompt_logprobs is set when the prompt is scored.
  bool echo = false;
  int prompt_logprobs = -1;

  // tzero_resume: {"tokens": [ids]}, the ids this request generated before its connection was
  // cut (docs/REPLICAS.md); resolve_prompt appends them to the prompt (params.n_resumed).
  bool resume = false;
  std::vector<int32_t> resume_tokens;

  tzero::RequestParams params;  // stop strings, sampling, ignore_eos, grammar (prompt not set yet)
  // After resolve_prompt: one engine request per prompt (params with its prompt_tokens and
  // max_tokens); params is the first of them.
  std::vector<tzero::RequestParams> resolved;

  // Chat with tools (server/tool_calls.h): the tools (null without), and the messages as given
  // when a template must render tool calls or tool turns.
  std::shared_ptr<ToolRequest> tools;
  nlohmann::ordered_json chat_messages;
  bool tool_turns = false;  // some message is a tool turn or carries tool_calls
};

// Parses and validates the body. Throws ApiError.
OpenAiRequest parse_request(Endpoint endpoint, const std::string& body);

// Fills `resolved` (and params, its first) with each prompt's tokens (tokenized here, or the
// chat template applied) and max_tokens; a prompt or prompt + max_tokens beyond the context is
// a 400 (code context_length_exceeded; with several prompts the message names which).
// chat_template: a named format or "" for the model's own.
void resolve_prompt(OpenAiRequest& r, const tzero::Engine& engine,
                    const std::string& chat_template);

}  // namespace tzero::server
