// The JSON the server answers with, OpenAI's shapes: whole responses ("text_completion",
// "chat.completion") and server-sent-event chunks ("text_completion" chunks,
// "chat.completion.chunk"), logprobs in each endpoint's format, usage, the [DONE] line.
// Pure functions of their inputs: the HTTP layer decides when to send what.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.h"
#include "tzero/engine.h"

namespace tzero::server {

struct ResponseMeta {
  Endpoint endpoint = Endpoint::completions;
  std::string id;           // cmpl-... / chatcmpl-...
  int64_t created = 0;      // unix seconds
  std::string model;        // the name the response reports
  std::string fingerprint;  // system_fingerprint: "tz-" + the engine's numerics fingerprint
  bool logprobs = false;    // the request asked for logprobs
  // Completions scoring (server/openai_request.h): echo puts echo_text (the prompt) before the
  // completion and, with logprobs, the prompt's tokens before the generated ones (the first,
  // first_piece, with null logprobs); prompt_logprobs >= 0 adds vLLM's
  // choices[].prompt_logprobs with that many alternatives. top_logprobs: `logprobs: N`.
  bool echo = false;
  struct Prompt {
    std::string echo_text, first_piece;
    int n_prompt = 0;  // its tokens (without resumed ones)
  };
  std::vector<Prompt> prompts;  // completions may have several: choice c answers c / n
  int n = 1;                    // choices per prompt
  int top_logprobs = 0;
  int prompt_logprobs = -1;
  uint64_t seed = 0;  // choice c was sampled with seed + c % n (reported in its "tzero")
  const Prompt& prompt_of(int choice) const { return prompts[size_t(choice / n)]; }
  uint64_t seed_of(int choice) const { return seed + uint64_t(choice % n); }
  // Chat with tools: replies are split into content and tool_calls (server/tool_calls.h).
  std::shared_ptr<const ToolRequest> tools;
  // Chat with a harmony model (gpt-oss): replies are split into reasoning_content, content and
  // tool_calls by their channels (server/harmony.h).
  bool harmony = false;
};

// One generated token with what logprobs report about it.
struct TokenOut {
  int32_t token = -1;
  std::string piece;  // the token's own text (Engine::token_text)
  float logprob = 0;
  std::vector<tzero::TokenLogprob> top;
  int rank = 0;               // prompt tokens: 1 + the tokens with a larger logit
  bool null_logprob = false;  // the prompt's first token: no logprob (null in JSON)
};

// A response's token counts. With speculative decoding on the server, completion_tokens_details
// as OpenAI's predicted outputs spell it: accepted_prediction_tokens (drafts the model sampled
// too) and rejected_prediction_tokens (drafts verified and refused).
struct Usage {
  int prompt_tokens = 0, completion_tokens = 0;
  bool speculative = false;
  int drafted = 0, accepted = 0;
  // Adds a final event's counts; its prompt only when `prompt` (each prompt once over its n).
  void add(const tzero::TokenEvent& final_event, bool prompt);
  nlohmann::json to_json() const;
};

// Logprobs of a run of tokens. Completions: {tokens, token_logprobs, top_logprobs, text_offset}
// with text_offset counted in bytes from `offset` (the pieces' running length in the
// completion). Chat: {content: [{token, logprob, bytes, top_logprobs}], refusal: null}.
nlohmann::json logprobs_json(Endpoint ep, const std::vector<TokenOut>& tokens, size_t offset);

struct ChoiceOut {
  std::string text;
  std::vector<TokenOut> prompt;  // the prompt tokens' scores (prompt events), when asked
  std::vector<TokenOut> tokens;
  std::vector<int32_t> token_ids;    // every generated token, in order (the "tzero" field)
  std::string finish_reason;         // stop, length, tool_calls or grammar_dead_end
  std::vector<ToolCall> tool_calls;  // chat with tools: the calls (text is the content then)
  std::string reasoning;             // harmony: the analysis channel (reasoning_content)
  std::string harmony_content;       // harmony: the content channels, as they arrive
  std::string logits_digest;         // TokenEvent::logits_digest, as `tzero run` prints it
  std::string stop_reason;           // TokenEvent::stop_reason (eos, eot, stop_string, ...)
};

// The prompt's entries of an echoed logprobs list: its first token (null logprobs), then the
// scored ones with at most m.top_logprobs alternatives.
std::vector<TokenOut> echo_tokens(const ResponseMeta& m, int choice,
                                  const std::vector<TokenOut>& prompt);
// vLLM's prompt_logprobs: [null, {"<id>": {logprob, rank, decoded_token}, ...}, ...]: per
// scored prompt token itself and its top n alternatives.
nlohmann::json prompt_logprobs_json(const std::vector<TokenOut>& prompt, int n);
// tzero's extension of a choice (docs/SERVER.md, "The tzero field"): what `tzero run` needs
// to reproduce it and prints to compare, {"logits_digest", "stop_reason", "seed", "tokens"}
// (tokens: the generated ids, in a stream those not yet sent). Additive: an OpenAI client
// ignores it.
nlohmann::json tzero_extension(const ResponseMeta& m, int index, const std::string& logits_digest,
                               const std::string& stop_reason,
                               const std::vector<int32_t>& tokens = {});
// A content chunk's "tzero" field: the ids of the tokens whose text the chunk completes and
// the choice's seed, {"tokens": [...], "seed": s} (what a client resumes from, REPLICAS.md).
nlohmann::json tzero_chunk_extension(const ResponseMeta& m, int index,
                                     const std::vector<int32_t>& tokens);

// The whole non-streaming response.
nlohmann::json full_response(const ResponseMeta& m, const std::vector<ChoiceOut>& choices,
                             const Usage& usage);

// One SSE event ("data: {...}\n\n"). A content chunk of choice `index` carries `text` and the
// logprobs of `tokens` (offset as above); `role_first` makes a chat chunk the opening one
// (delta {"role": "assistant", "content": ""}); a finish chunk has finish_reason set and
// empty text. usage_null adds "usage": null (when stream_options.include_usage). A non-null
// `extension` becomes the choice's "tzero" field (the finish chunk's, tzero_extension()).
// A chat chunk whose delta is {"reasoning_content": text} (harmony's analysis channel).
std::string sse_reasoning_chunk(const ResponseMeta& m, int index, const std::string& text,
                                bool usage_null);
std::string sse_chunk(const ResponseMeta& m, int index, const std::string& text,
                      const std::vector<TokenOut>& tokens, size_t offset, bool role_first,
                      const std::string& finish_reason, bool usage_null,
                      const nlohmann::json& extension = nullptr);
// A completions stream's prompt chunk of choice `index`, sent before its generated text: the
// echoed prompt text and its logprobs (echo), vLLM's prompt_logprobs (when asked).
std::string sse_prompt_chunk(const ResponseMeta& m, int index, const std::vector<TokenOut>& prompt,
                             bool usage_null);
// A chat chunk whose delta holds these tool calls, numbered from first_index within the choice.
std::string sse_tool_calls_chunk(const ResponseMeta& m, int index,
                                 const std::vector<ToolCall>& calls, int first_index,
                                 bool usage_null);
// The usage chunk (choices: [], usage: {...}) sent last when include_usage.
std::string sse_usage_chunk(const ResponseMeta& m, const Usage& usage);
// An error in the middle of a stream (e.g. the server shutting down): data: {"error": ...}.
std::string sse_error(const nlohmann::json& error);
inline const char* sse_done() {
  return "data: [DONE]\n\n";
}

}  // namespace tzero::server
