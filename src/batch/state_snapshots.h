// The prefix cache of models with recurrent layers (Gated DeltaNet hybrids): snapshots of a
// sequence's recurrent state at block boundaries of its prompt, in state slots of the KV store
// beside the sequences' own (KvStore::n_state_slots), so that a later request whose prompt
// starts with the same tokens restores the state there instead of recomputing it.
//
// A snapshot is keyed by the exact tokens before it (a hash, then a token-by-token compare: a
// collision can only miss), not by KV blocks: it holds the state after those tokens, which the
// canonical order (delta-v1) makes a function of those tokens only, so a restore gives the bits
// a recomputation would write. The pool is small (a snapshot is as large as a sequence's whole
// state) and recycled least recently used first.
#pragma once

#include <cstdint>
#include <vector>

namespace tzero {

class StateSnapshots {
 public:
  // Slots [first_slot, first_slot + n_slots) of the store are the pool (n_slots 0: off).
  StateSnapshots(int first_slot, int n_slots);

  int n_slots() const { return int(entries_.size()); }
  int n_valid() const;

  // The slot holding the state after tokens[0..n), or -1; marks it recently used.
  int find(const std::vector<int32_t>& tokens, int n);
  // A slot to save the state after tokens[0..n) into during the next pass (the least recently
  // used one that is not pending; -1 when every slot is pending). It is valid after commit().
  int reserve(const std::vector<int32_t>& tokens, int n);
  // The pass wrote the reserved slots: they become findable.
  void commit();
  // The pass failed: the reserved slots hold nothing usable and are dropped.
  void abort();

 private:
  struct Entry {
    bool valid = false, pending = false;
    uint64_t hash = 0, last_use = 0;
    std::vector<int32_t> tokens;  // the prefix the state follows
  };
  static uint64_t hash_of(const int32_t* tokens, int n);

  int first_slot_;
  uint64_t tick_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace tzero
