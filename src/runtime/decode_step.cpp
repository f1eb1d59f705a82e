#include "runtime/decode_step.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace tzero {

DecodeStep::DecodeStep(const Vocab& vocab, const SamplingParams& sampling, StopRules rules,
                       std::vector<int32_t> prompt, int first_step, int n_resumed)
    : vocab_(vocab),
      sampling_(sampling),
      rules_(std::move(rules)),
      first_step_(first_step),
      tokens_(std::move(prompt)),
      n_prompt_(int(tokens_.size()) - n_resumed),
      sampler_(sampling),
      stream_(vocab),
      matcher_(rules_.stop),
      prev_(n_prompt_ > 0 ? tokens_[size_t(n_prompt_) - 1] : -1),
      replay_next_(n_prompt_),
      resume_end_(int(tokens_.size())) {
  assert(n_resumed >= 0 && n_prompt_ >= 1);
}

StepResult DecodeStep::replay(const float* row, int n_vocab) {
  assert(replaying() && !done());
  StepResult out;
  const int32_t tok = tokens_[size_t(replay_next_)];
  if (row) digest_.update(row, size_t(n_vocab) * sizeof(float));
  out.token = tok;
  ++replay_next_;
  if (!grammar_accepts(tok, out)) return out;
  apply_stop_rules(tok, replay_next_ - n_prompt_, out);
  out.text.clear();  // the client has it already (a stop's tail it has not: kept)
  return out;
}

bool DecodeStep::grammar_accepts(int32_t tok, StepResult& out) {
  if (!constraint_) return true;
  try {
    constraint_->accept(tok);
    return true;
  } catch (const GrammarBudgetExceeded&) {
    stop_ = out.stop = StopReason::grammar_budget;
    return false;
  }
}

StepResult DecodeStep::step(const float* row, int n_vocab) {
  assert(!done() && !replaying());
  StepResult out;
  const float* choose_from = row;
  try {
    if (constraint_) {
      if (!constraint_->any_allowed()) {
        stop_ = out.stop = StopReason::grammar_dead_end;
        out.tail = matcher_.push(stream_.finish()) + matcher_.finish();
        return out;
      }
      masked_.assign(row, row + n_vocab);
      constraint_->apply(masked_.data(), n_vocab);
      choose_from = masked_.data();
    }
  } catch (const GrammarBudgetExceeded&) {
    // An error, not an answer: no token, no tail (the request is reported as failed).
    stop_ = out.stop = StopReason::grammar_budget;
    return out;
  }
  digest_.update(row, size_t(n_vocab) * sizeof(float));
  const int32_t tok = sampler_.sample(choose_from, n_vocab, first_step_ + n_generated(), tokens_,
                                      size_t(n_prompt_));
  // The token was chosen under the grammar, but what follows it may be over the budget.
  if (!grammar_accepts(tok, out)) return out;
  out.token = tok;
  if (sampling_.logprobs || sampling_.top_logprobs > 0) {
    const Logprobs lp(row, n_vocab);
    out.logprob = lp.of(tok);
    for (const auto& [id, v] : lp.top(sampling_.top_logprobs))
      out.top.push_back({id, vocab_.token_to_piece(id, true), v});
  }
  tokens_.push_back(tok);
  apply_stop_rules(tok, n_generated(), out);
  return out;
}

void DecodeStep::apply_stop_rules(int32_t tok, int n_gen, StepResult& out) {
  const auto& stops = rules_.stop_tokens;
  if (!rules_.ignore_eos && tok == vocab_.eos())
    stop_ = StopReason::eos;
  else if (!rules_.ignore_eos && vocab_.ends_turn(tok))
    stop_ = StopReason::eot;
  else if (std::find(stops.begin(), stops.end(), tok) != stops.end())
    stop_ = StopReason::stop_token;
  if (stop_ == StopReason::none) {
    out.text = matcher_.push(stream_.push(tok, prev_));
    prev_ = tok;
    if (matcher_.stopped()) stop_ = StopReason::stop_string;
  }
  if (stop_ == StopReason::none && n_gen >= rules_.max_tokens) stop_ = StopReason::max_tokens;
  if (stop_ == StopReason::none && int64_t(n_prompt_) + n_gen > int64_t(rules_.n_ctx))
    stop_ = StopReason::context;
  if (stop_ != StopReason::none && stop_ != StopReason::stop_string)
    out.tail = matcher_.push(stream_.finish()) + matcher_.finish();
  out.stop = stop_;
}

}  // namespace tzero
