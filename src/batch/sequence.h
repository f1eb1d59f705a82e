// One request inside the batched engine: its tokens, how many of them the KV cache holds, its
// block table, and its own decode step (sampler, digest, stop rules, text state; so nothing it
// computes depends on its batch mates).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/decode_step.h"
#include "tzero/engine.h"

namespace tzero {

// The stop rules of a request in a context of n_ctx positions.
inline StopRules stop_rules_of(const RequestParams& p, int n_ctx) {
  StopRules r;
  r.max_tokens = p.max_tokens;
  r.n_ctx = n_ctx;
  r.stop = p.stop;
  r.stop_tokens = p.stop_tokens;
  r.ignore_eos = p.ignore_eos;
  return r;
}

struct Sequence {
  Sequence(uint64_t id_, tzero::RequestParams params_, tzero::TokenCallback cb, const Vocab& vocab,
           int n_ctx)
      : id(id_),
        params(std::move(params_)),
        on_event(std::move(cb)),
        decode(vocab, params.sampling, stop_rules_of(params, n_ctx), params.prompt_tokens),
        tokens(decode.tokens()),
        n_prompt(decode.n_prompt()) {}
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  int n_generated() const { return decode.n_generated(); }
  int n_pending() const { return int(tokens.size()) - n_computed; }  // to feed before sampling

  const uint64_t id;
  const tzero::RequestParams params;  // prompt_tokens filled in
  const tzero::TokenCallback on_event;
  DecodeStep decode;                   // samples, digests, stops and streams this request
  const std::vector<int32_t>& tokens;  // decode.tokens(): prompt, then every generated token
  const int n_prompt;
  int n_computed = 0;          // leading positions whose keys and values the table holds
  std::vector<int32_t> table;  // KV block table
  int n_cached = -1;           // prompt positions reused from the prefix cache (first time)
  int n_preempted = 0;
  bool scheduled = false;  // in the step being planned
};

}  // namespace tzero
