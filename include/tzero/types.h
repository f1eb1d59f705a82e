// The engine's small vocabularies as types: the numerics mode, why a generation stopped, the
// OpenAI-style finish reason, and the kind of a refused request. Strings appear only at the
// edges (command line, JSON): parse_* and to_string below are the one spelling of each.
#pragma once

#include <optional>
#include <string_view>

namespace tzero {

// deterministic: the reproducibility contract (the default). fast: dynamic work split and
// split attention, no contract (there to measure its cost). portable: with GPU layers, the
// device running the CPU's canonical orders.
enum class Mode { deterministic, fast, portable };

// Why a generation ended, exactly (the decode step's stop rules, runtime/decode_step.h).
enum class StopReason {
  none,              // still generating
  eos,               // the model's EOS token (tokenizer.ggml.eos_token_id)
  eot,               // its end-of-turn token (tokenizer.ggml.eot_token_id), when it is not EOS
  stop_token,        // one of the request's stop tokens
  stop_string,       // one of the request's stop strings appeared in the text
  max_tokens,        // the request's token limit
  context,           // the context is full: the next token has no position
  cancelled,         // the request was cancelled (engine only)
  grammar_dead_end,  // the request's grammar admits no token of the vocabulary here
  grammar_budget,    // the request's grammar needed more matching work than its budget
                     // (grammar/token_mask.h, GrammarBudget): an error, not an answer
};

// OpenAI's finish_reason: what a StopReason is reported as by the engine and the server.
enum class FinishReason { none, stop, length, cancelled, grammar_dead_end, grammar_budget };
FinishReason finish_reason_of(StopReason r);

// How an embedding request pools the final hidden states of its positions (pool-v1,
// docs/DETERMINISM.md). none: not an embedding request. model: the engine's default, the
// model's `{arch}.pooling_type` when the file declares mean, cls or last, else mean (or
// EngineOptions::pooling when that names one). mean: the average over every position; cls:
// the first position's state; last: the last position's state.
enum class Pooling { none, model, mean, cls, last };

// Why Engine::submit refused a request (RequestError::kind).
enum class RequestErrorKind {
  invalid_value,            // a parameter out of range (RequestError::param names it)
  invalid_token,            // a prompt token id outside the vocabulary
  empty_prompt,             // nothing to start from (and no BOS token)
  context_length_exceeded,  // the prompt or prompt + max_tokens does not fit
  chat_template,            // no chat template, or the template refused the conversation
  invalid_grammar,          // a grammar that does not compile (or beyond the size limits)
  grammar_budget,           // a grammar whose start alone needs more than its matching budget
};

// The edge spellings. Mode: "deterministic", "fast", "portable". StopReason (as `tzero run
// --json` prints stop_reason): "", "eos", "eot", "stop_token", "stop_string", "length"
// (max_tokens), "context", "cancelled", "grammar_dead_end", "grammar_budget". FinishReason: "",
// "stop", "length", "cancelled", "grammar_dead_end", "grammar_budget". RequestErrorKind: its name
// ("invalid_value", "context_length_exceeded", ...). Pooling: "none", "model", "mean", "cls",
// "last".
const char* to_string(Mode m);
const char* to_string(StopReason r);
const char* to_string(FinishReason r);
const char* to_string(RequestErrorKind k);
const char* to_string(Pooling p);
std::optional<Mode> parse_mode(std::string_view s);        // nullopt for anything else
std::optional<Pooling> parse_pooling(std::string_view s);  // nullopt for anything else

}  // namespace tzero
