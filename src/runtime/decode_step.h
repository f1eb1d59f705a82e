// One decode step of one request: everything between a logits row and the next forward pass.
// `tzero run` (generate), `tzero chat`, the batched engine (one per Sequence) and so the audit
// and the server all go through it, so they sample, digest, stop and stream alike.
//
// step(row) does, in order:
//   0. with a grammar (constrain()): when it admits no token here, the step stops at once with
//      StopReason::grammar_dead_end (no token, the row not digested); otherwise the tokens it
//      refuses get -inf in a copy of the row that steps 2 samples from (grammar/token_mask.h).
//      When matching the grammar here (the mask, or accepting the sampled token) needs more than
//      its GrammarBudget, the step stops with StopReason::grammar_budget and no token: an
//      error for the request, at the same step on every machine (work is counted, not timed);
//   1. digest: the row's float32 bytes go into the request's XXH3-128 (the logits digest of
//      `tzero run`: every row a token was sampled from, in order);
//   2. sample: Sampler (sampler-v2) with the request's SamplingParams, the step index
//      first_step + n_generated, and the context (prompt then output) for the penalties;
//   3. logprobs (when SamplingParams::logprobs or top_logprobs): Logprobs of the raw row;
//   4. the stop rules, first match wins:
//        a. EOS, then EOT (unless ignore_eos), then a stop token: the token is kept in
//           tokens() (and reported), its text is not streamed;
//        b. otherwise the token's text goes through TextStream (UTF-8-safe) and StopMatcher
//           (stop strings held back while they may still match); a stop string ends it there,
//           the text cut before it;
//        c. max_tokens generated;
//        d. the context is full: prompt + generated > n_ctx, the token has no position to be
//           fed at (it is still reported);
//   5. on a stop other than a stop string, the held-back text is released as `tail`.
// After a stop, step() must not be called again.
//
// Resuming (RequestParams::n_resumed, docs/REPLICAS.md): the last n_resumed prompt tokens are
// earlier output of this same request. They count as generated (penalties see them as output,
// the sampler's step index and max_tokens count them), and before the first step() each goes
// through replay(row) with the row it was sampled from: digested, its text streamed (not
// released: the client has it) and the stop rules applied, so the state after the last one is
// the uninterrupted run's.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/hash.h"
#include "grammar/token_mask.h"
#include "runtime/sampler.h"
#include "runtime/stop_matcher.h"
#include "runtime/text_stream.h"
#include "tokenizer/vocab.h"
#include "tzero/sampling.h"
#include "tzero/types.h"

namespace tzero {

// What ends a request besides the model's own EOS/EOT.
struct StopRules {
  int max_tokens = INT_MAX;          // most tokens generated (>= 1)
  int n_ctx = INT_MAX;               // positions: stop when the next token would have none
  std::vector<std::string> stop;     // stop strings (cut from the text)
  std::vector<int32_t> stop_tokens;  // besides EOS and EOT
  bool ignore_eos = false;           // EOS and EOT do not stop (stop tokens still do)
};

// What one step produced.
struct StepResult {
  int32_t token = -1;
  std::string text;                    // text released by this token (possibly empty)
  float logprob = 0;                   // when logprobs were asked for
  std::vector<TokenLogprob> top;       // top_logprobs alternatives, best first
  StopReason stop = StopReason::none;  // not none: this was the last step
  std::string tail;                    // on a stop: the text that was still held back, released now
};

class DecodeStep {
 public:
  // prompt: the prompt tokens (not empty). first_step: the sampler's step index of the first
  // generated token (a chat continues its steps across turns). n_resumed: the last n_resumed
  // of `prompt` are earlier output (replay() them first).
  DecodeStep(const Vocab& vocab, const SamplingParams& sampling, StopRules rules,
             std::vector<int32_t> prompt, int first_step = 0, int n_resumed = 0);

  // Constrains every following step to the grammar (grammar/token_mask.h).
  void constrain(std::unique_ptr<TokenConstraint> c) { constraint_ = std::move(c); }

  // row: (n_vocab) float32 logits the next token is chosen from.
  StepResult step(const float* row, int n_vocab);

  // Resumed tokens not replayed yet: the next is tokens()[replay_next()], sampled from the row
  // of position replay_next() - 1. replay(row) takes that row (nullptr: check the stop rules
  // only, no digest) and returns the token with its stop and, on a stop, the held-back tail;
  // its own text is not returned (the client has it). A stop before the last resumed token
  // means they are not this request's output: Engine::submit refuses that.
  bool replaying() const { return replay_next_ < resume_end_; }
  int replay_next() const { return replay_next_; }
  int resume_end() const { return resume_end_; }  // n_prompt() + n_resumed
  StepResult replay(const float* row, int n_vocab);

  const std::vector<int32_t>& tokens() const { return tokens_; }  // prompt, then generated
  int n_prompt() const { return n_prompt_; }
  int n_generated() const { return int(tokens_.size()) - n_prompt_; }
  int tokens_left() const { return rules_.max_tokens - n_generated(); }  // before max_tokens
  StopReason stop_reason() const { return stop_; }
  bool done() const { return stop_ != StopReason::none; }
  std::string digest() const { return digest_.hex(); }  // over every row given to step()

 private:
  const Vocab& vocab_;
  const SamplingParams sampling_;
  const StopRules rules_;
  const int first_step_;
  std::vector<int32_t> tokens_;
  const int n_prompt_;
  Sampler sampler_;
  TextStream stream_;
  StopMatcher matcher_;
  Hasher128 digest_;
  int32_t prev_;  // the last token, for the text stream
  std::unique_ptr<TokenConstraint> constraint_;
  std::vector<float> masked_;  // (n_vocab) the row with the grammar's refused tokens at -inf
  StopReason stop_ = StopReason::none;
  int replay_next_ = 0, resume_end_ = 0;  // resumed tokens: [n_prompt_, resume_end_)

  // The grammar (if any) takes tok; false, with the step stopped as StopReason::grammar_budget,
  // when matching it is over the grammar's budget.
  bool grammar_accepts(int32_t tok, StepResult& out);
  // Stop rules 4a-4d and 5 for token tok, the n_gen-th generated (tokens_ holds it).
  void apply_stop_rules(int32_t tok, int n_gen, StepResult& out);
};

}  // namespace tzero
