// What one request asks for (RequestParams) and how it is refused (RequestError): value types
// shared by the batched engine (tzero/engine.h), tzero run's generate (src/runtime/) and the
// Python package, which all check a request on one path (src/runtime/request.h).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tzero/sampling.h"
#include "tzero/types.h"

namespace tzero {

struct RequestParams {
  std::vector<int32_t> prompt_tokens;  // used as is when not empty, otherwise:
  std::string prompt;                  // tokenized: BOS as the vocabulary asks (add_bos_token),
                                       // none when parse_special and it starts with the BOS text
  bool parse_special = false;          // special-token texts in prompt become those tokens
  int max_tokens = 128;                // stops earlier at EOS, EOT, a stop or a full context;
                                       // 0 (nothing generated) only with prompt_logprobs or
                                       // for an embedding request
  std::vector<std::string> stop;       // stop strings (not part of the returned text)
  std::vector<int32_t> stop_tokens;    // besides EOS and EOT (end of turn)
  bool ignore_eos = false;             // do not stop at EOS or EOT (stop tokens still apply)
  SamplingParams sampling;
  // A GBNF grammar (src/grammar/gbnf.h, docs/GRAMMAR.md) the output must match: at each step
  // only tokens that continue a valid output may be sampled, and EOS / EOT / a stop token only
  // once it is complete. A grammar that does not compile is a RequestError (invalid_grammar);
  // one that admits no token at some step ends the request (StopReason::grammar_dead_end).
  std::string grammar;
  // Scoring: the logprob of every prompt token after the first (token p + 1 from the logits
  // of position p, logprob-v1) and prompt_top_logprobs (0..20) alternatives, delivered as
  // events with `prompt` set, in prompt order, before any generated token's. Every prompt
  // position is computed (no prefix cache for them), so they are the bits of a solo run.
  bool prompt_logprobs = false;
  int prompt_top_logprobs = 0;
  // Embedding: not none makes this a prefill-only request that generates nothing (max_tokens,
  // stop rules and sampling unused): its final event carries `embedding`, the final hidden
  // states after the output norm, pooled (Pooling::model: the engine's default) over the
  // prompt's positions, its first embedding_dims components kept (0: all n_embd; else
  // 1..n_embd), then L2-normalised (pool-v1, docs/DETERMINISM.md). Not with prompt_logprobs.
  Pooling embedding = Pooling::none;
  int embedding_dims = 0;
  // Resuming (docs/REPLICAS.md): the last n_resumed of prompt_tokens (which must be given) are
  // this request's own earlier output, e.g. what a replica that died had streamed. They count
  // as generated: penalties see them as output, the sampler's step index starts at
  // n_resumed (a seeded run continues its draw sequence), max_tokens counts them, stop strings
  // see their text; their logits rows are computed in the prefill and digested in order. So
  // the events are exactly those an uninterrupted run sends after them (none for them), and
  // the final event's n_generated and logits_digest are the uninterrupted run's. Refused
  // (RequestError, param "tzero_resume") with a grammar, prompt_logprobs or an embedding, and
  // when the resumed tokens would have stopped the request before their last one.
  int n_resumed = 0;
};

// Invalid input (a prompt longer than the context, a parameter out of range): the kind says
// what, param names the request field ("" when none does: "prompt" for the context), the
// message says which and why.
struct RequestError : std::runtime_error {
  RequestError(RequestErrorKind kind_, std::string param_, const std::string& message)
      : std::runtime_error(message), kind(kind_), param(std::move(param_)) {}
  RequestErrorKind kind;
  std::string param;
};
}  // namespace tzero
