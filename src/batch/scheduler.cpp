#include "batch/scheduler.h"

#include <algorithm>
#include <cstdint>

#include "base/error.h"

namespace tzero {

Scheduler::Scheduler(BlockManager& blocks, int max_batch_tokens, int max_seqs, int prefill_chunk,
                     StateSnapshots* snapshots)
    : blocks_(blocks),
      snapshots_(snapshots),
      max_batch_tokens_(max_batch_tokens),
      max_seqs_(max_seqs),
      prefill_chunk_(prefill_chunk > 0 ? prefill_chunk : max_batch_tokens) {
  for (int i = max_seqs - 1; i >= 0; --i) free_slots_.push_back(i);
}

void Scheduler::release_slot(Sequence* s) {
  if (s->state_slot >= 0) free_slots_.push_back(s->state_slot);
  s->state_slot = -1;
}

void Scheduler::preempt(Sequence* s) {
  blocks_.free(s->table);
  release_slot(s);
  s->restore_from = -1;
  s->n_computed = 0;
  s->drafts.clear();
  ++s->n_preempted;
  ++preemptions_;
  running_.erase(std::find(running_.begin(), running_.end(), s));
  waiting_.push_front(s);
}

bool Scheduler::make_room(Sequence* s, int n) {
  while (!blocks_.can_append(s->table, s->n_computed + n)) {
    Sequence* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
      if (*it != s && !(*it)->scheduled && !(*it)->in_flight) {
        victim = *it;
        break;
      }
    if (!victim) {
      // The blocks may be held by sequences whose pass is out: s waits for them to land (and
      // then preempts them) rather than start over.
      if (std::any_of(running_.begin(), running_.end(),
                      [&](const Sequence* r) { return r != s && r->in_flight; }))
        return false;
      preempt(s);
      return false;
    }
    preempt(victim);
  }
  blocks_.append(s->table, s->n_computed + n);
  return true;
}

std::vector<ScheduledSlice> Scheduler::schedule() {
  std::vector<ScheduledSlice> plan;
  int budget = max_batch_tokens_;
  // This step's share of the sequences (every one with one group).
  const int n_seqs = std::min(int(running_.size() + waiting_.size()), max_seqs_);
  const size_t share =
      groups_ == 1 ? SIZE_MAX : size_t(std::max(1, (n_seqs + groups_ - 1) / groups_));
  for (const bool decode : {true, false}) {
    // Preemption edits running_, so walk a snapshot and skip what left it.
    const std::vector<Sequence*> snapshot = running_;
    for (Sequence* s : snapshot) {
      if (budget == 0 || plan.size() >= share) break;
      if (s->scheduled || s->in_flight || (s->n_pending() == 1) != decode) continue;
      if (std::find(running_.begin(), running_.end(), s) == running_.end()) continue;
      // A decode token with its drafts, as many as the budget leaves.
      const int n = std::min({s->n_pending() + int(s->drafts.size()), budget, prefill_chunk_});
      if (decode) s->drafts.resize(size_t(std::max(n - 1, 0)));
      if (!make_room(s, n)) continue;
      s->scheduled = true;
      plan.push_back({s, n});
      budget -= n;
    }
  }
  while (!waiting_.empty() && budget > 0 && int(running_.size()) < max_seqs_ &&
         plan.size() < share) {
    Sequence* s = waiting_.front();
    const int total = int(s->tokens.size()), bs = blocks_.block_size();
    // Always leave the last token to compute: its logits are what the step is for (and every
    // position whose logits or hidden state a scoring or embedding request still needs).
    std::vector<int32_t> matched = blocks_.match_prefix(s->tokens, s->reusable_prefix() / bs);
    // A recurrent model continues only from a snapshot of its state: the longest matched
    // prefix that has one.
    int restore = -1;
    if (snapshots_)
      while (!matched.empty() &&
             (restore = snapshots_->find(s->tokens, int(matched.size()) * bs)) < 0)
        matched.pop_back();
    const int cached = int(matched.size()) * bs;
    const int n = std::min({total - cached, budget, prefill_chunk_});
    if (!blocks_.can_allocate(s->table, matched, cached + n)) break;
    blocks_.allocate(s->table, matched, cached + n);
    s->n_computed = cached;
    if (s->n_cached < 0) s->n_cached = std::min(cached, s->n_prompt);
    waiting_.pop_front();
    running_.push_back(s);
    s->state_slot = free_slots_.back();  // running_ < max_seqs: one is free
    free_slots_.pop_back();
    s->restore_from = matched.empty() ? -1 : restore;
    s->scheduled = true;
    plan.push_back({s, n});
    budget -= n;
  }
  for (const ScheduledSlice& sl : plan) sl.seq->scheduled = false;
  return plan;
}

void Scheduler::remove(Sequence* s) {
  check(!s->in_flight, "internal: a sequence removed while its pass is in flight");
  auto w = std::find(waiting_.begin(), waiting_.end(), s);
  if (w != waiting_.end()) waiting_.erase(w);
  auto r = std::find(running_.begin(), running_.end(), s);
  if (r != running_.end()) running_.erase(r);
  if (!s->table.empty()) blocks_.free(s->table);
  release_slot(s);
}

}  // namespace tzero
