// Continuous batching: which tokens of which sequences the next forward pass computes.
//
// Each step fills a token budget, first come first served:
//   1. one decode token for every running sequence that has sampled and waits to be fed, with
//      its drafts (Sequence::drafts) as far as the budget goes;
//   2. the next prefill chunk (at most prefill_chunk tokens) of running sequences, oldest
//      first;
//   3. new sequences from the waiting queue, oldest first, while a slot, budget and KV blocks
//      are free; their prompt starts after its longest cached prefix (BlockManager). The queue
//      is not skipped: a request that does not fit holds back younger ones.
// When a running sequence needs a block and none is free, the youngest other running
// sequence is preempted (its blocks freed, its progress dropped) and requeued at the front, to
// be recomputed later; if it is itself the youngest, it steps back. The oldest sequence always
// progresses, so there is no deadlock, and the engine refuses requests that could not fit in
// the pool alone. Whatever the schedule, each sequence's bits are those of its solo run.
//
// A pipeline over MPI ranks keeps several passes in flight (micro-batches, docs/DISTRIBUTED.md):
// a sequence in one (Sequence::in_flight) is neither scheduled nor preempted until it lands (a
// sequence that needs its blocks waits for it rather than step back), and with set_groups(G) a step
// takes at most ceil(n / G) of the n running and waiting sequences, so that they split into groups
// that take turns on the ranks.
//
// Each running sequence also holds one of max_seqs state slots (Sequence::state_slot: where a
// model with recurrent layers keeps its state, KvStore): taken when it starts running, given
// back when it is preempted (its state is recomputed from position 0 with its blocks) or
// removed. With recurrent layers (snapshots given), a prompt's cached prefix ends where a
// snapshot of the state is (batch/state_snapshots.h): the sequence then restores it
// (Sequence::restore_from) before its first pass.
#pragma once

#include <deque>
#include <vector>

#include "batch/block_manager.h"
#include "batch/sequence.h"
#include "batch/state_snapshots.h"

namespace tzero {

struct ScheduledSlice {
  Sequence* seq;
  int n_tokens;  // tokens[seq->n_computed, seq->n_computed + n_tokens) this step
};

class Scheduler {
 public:
  Scheduler(BlockManager& blocks, int max_batch_tokens, int max_seqs, int prefill_chunk,
            StateSnapshots* snapshots = nullptr);

  void add(Sequence* s) { waiting_.push_back(s); }
  // Plans one step; allocates the KV blocks it needs. Empty when there is nothing to run.
  std::vector<ScheduledSlice> schedule();
  // Removes a sequence (finished or cancelled, not in flight) wherever it is and frees its
  // blocks.
  void remove(Sequence* s);
  // How many groups the sequences split into (1: a step takes all it can; the default).
  void set_groups(int groups) { groups_ = groups < 1 ? 1 : groups; }

  int n_waiting() const { return int(waiting_.size()); }
  int n_running() const { return int(running_.size()); }
  uint64_t preemptions() const { return preemptions_; }

 private:
  void preempt(Sequence* s);
  void release_slot(Sequence* s);
  // Grows s to cover n more tokens, preempting younger sequences if needed; false if s itself
  // had to step back, or waits (its blocks kept) for sequences in flight to land.
  bool make_room(Sequence* s, int n);

  BlockManager& blocks_;
  StateSnapshots* snapshots_;  // null: no recurrent state to restore
  int max_batch_tokens_, max_seqs_, prefill_chunk_;
  int groups_ = 1;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // in admission order
  std::vector<int> free_slots_;     // state slots no running sequence holds
  uint64_t preemptions_ = 0;
};

}  // namespace tzero
