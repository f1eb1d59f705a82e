// One request inside the batched engine: its tokens, how many of them the KV cache holds, its
// block table, and its own decode step (sampler, digest, stop rules, text state; so nothing it
// computes depends on its batch mates).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/decode_step.h"
#include "runtime/pooling.h"
#include "runtime/request.h"
#include "runtime/speculative.h"
#include "tzero/engine.h"

namespace tzero {

struct Sequence {
  // pooling: an embedding request's resolved pooling (mean, cls or last), else none.
  Sequence(uint64_t id_, tzero::RequestParams params_, tzero::TokenCallback cb, const Vocab& vocab,
           int n_ctx, Pooling pooling = Pooling::none, int n_embd = 0)
      : id(id_),
        params(std::move(params_)),
        on_event(std::move(cb)),
        decode(vocab, params.sampling, stop_rules_of(params, n_ctx), params.prompt_tokens, 0,
               params.n_resumed),
        tokens(decode.tokens()),
        n_prompt(decode.n_prompt()) {
    if (pooling != Pooling::none) pooler.emplace(pooling, n_prompt, n_embd);
  }
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  int n_generated() const { return decode.n_generated(); }
  int n_pending() const { return int(tokens.size()) - n_computed; }  // to feed before sampling
  // The token at position p: tokens[p], or past them a draft (speculative decoding).
  int32_t token_at(int p) const {
    return p < int(tokens.size()) ? tokens[size_t(p)] : drafts[size_t(p) - tokens.size()];
  }

  // What the forward pass must output for position p: logits to score prompt token p + 1
  // (prompt_logprobs, once per position), logits to sample from (the last position, unless
  // nothing is generated), or the hidden state to pool (embeddings).
  bool scores(int p) const { return params.prompt_logprobs && p >= n_scored && p + 1 < n_prompt; }
  bool samples(int p) const {
    return p + 1 == int(tokens.size()) && !pooler && params.max_tokens > 0;
  }
  bool pools(int p) const { return pooler && pooler->wants(p); }
  // Logits to replay resumed token p + 1 from (RequestParams::n_resumed), once per position.
  bool replays(int p) const {
    return decode.replaying() && p + 1 >= decode.replay_next() && p + 1 < decode.resume_end();
  }
  // Prefill-only: done once the prompt is computed (scoring with max_tokens 0, embeddings).
  bool prefill_only() const { return pooler.has_value() || params.max_tokens == 0; }
  // Leading positions the prefix cache may supply: their outputs are not needed (any more).
  // Always at least the last position is computed.
  int reusable_prefix() const {
    int n = int(tokens.size()) - 1;
    if (params.prompt_logprobs && n_scored + 1 < n_prompt) n = std::min(n, n_scored);
    if (pooler) n = std::min(n, pooler->next_needed());
    if (decode.replaying()) n = std::min(n, decode.replay_next() - 1);
    return n;
  }

  const uint64_t id;
  const tzero::RequestParams params;  // prompt_tokens filled in
  const tzero::TokenCallback on_event;
  DecodeStep decode;                   // samples, digests, stops and streams this request
  const std::vector<int32_t>& tokens;  // decode.tokens(): prompt, then every generated token
  const int n_prompt;
  int n_computed = 0;          // leading positions whose keys and values the table holds
  std::vector<int32_t> table;  // KV block table
  int state_slot = -1;         // recurrent state slot while running (Scheduler), else -1
  int restore_from = -1;       // a snapshot slot to restore into state_slot before its pass
  int n_cached = -1;           // prompt positions reused from the prefix cache (first time)
  int n_preempted = 0;
  bool scheduled = false;  // in the step being planned
  bool in_flight = false;  // in a pass launched and not finished (a pipeline's micro-batches)
  // Speculative decoding (runtime/speculative.h): tokens proposed to follow tokens.back(), fed
  // with it in the next step (the scheduler may cut them to its budget); each is verified by
  // the token sampled before it, and they are dropped after the step.
  std::vector<int32_t> drafts;
  std::unique_ptr<Drafter> drafter;   // a draft model's state for this request (or null)
  int n_drafted = 0, n_accepted = 0;  // drafts verified, and those the target sampled too
  // Kept across preemption, so a recomputed position is not delivered twice:
  int n_scored = 0;              // prompt positions whose next token's logprob was delivered
  std::optional<Pooler> pooler;  // an embedding request's pooled states so far
};

}  // namespace tzero
