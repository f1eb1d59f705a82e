// One request inside the batched engine: its tokens, how many of them the KV cache holds, its
// block table, and its own sampler and text state (so nothing it computes depends on its
// batch mates).
#pragma once

#include <cstdint>
#include <vector>

#include "base/hash.h"
#include "runtime/sampler.h"
#include "runtime/stop_matcher.h"
#include "runtime/text_stream.h"
#include "tzero/engine.h"

namespace tzero {

struct Sequence {
  Sequence(uint64_t id_, tzero::RequestParams params_, tzero::TokenCallback cb, const Vocab& vocab)
      : id(id_),
        params(std::move(params_)),
        on_event(std::move(cb)),
        tokens(params.prompt_tokens),
        n_prompt(int(tokens.size())),
        sampler(params.sampling),
        stream(vocab),
        stop(params.stop),
        prev(tokens.back()) {}

  int n_generated() const { return int(tokens.size()) - n_prompt; }
  int n_pending() const { return int(tokens.size()) - n_computed; }  // to feed before sampling

  const uint64_t id;
  const tzero::RequestParams params;  // prompt_tokens filled in
  const tzero::TokenCallback on_event;
  std::vector<int32_t> tokens;  // prompt, then every generated token
  const int n_prompt;
  int n_computed = 0;          // leading positions whose keys and values the table holds
  std::vector<int32_t> table;  // KV block table
  int n_cached = -1;           // prompt positions reused from the prefix cache (first time)
  int n_preempted = 0;
  bool scheduled = false;  // in the step being planned
  Sampler sampler;
  TextStream stream;
  StopMatcher stop;
  Hasher128 digest;  // over every sampled logits row
  int32_t prev;      // last token, for the text stream
};

}  // namespace tzero
