#include "batch/state_snapshots.h"

#include <xxhash.h>

#include <algorithm>

namespace tzero {

StateSnapshots::StateSnapshots(int first_slot, int n_slots)
    : first_slot_(first_slot), entries_(size_t(std::max(0, n_slots))) {}

int StateSnapshots::n_valid() const {
  int n = 0;
  for (const Entry& e : entries_) n += e.valid ? 1 : 0;
  return n;
}

uint64_t StateSnapshots::hash_of(const int32_t* tokens, int n) {
  return XXH3_64bits(tokens, size_t(n) * sizeof(int32_t));
}

int StateSnapshots::find(const std::vector<int32_t>& tokens, int n) {
  if (n <= 0 || n > int(tokens.size())) return -1;
  const uint64_t h = hash_of(tokens.data(), n);
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.valid && e.hash == h && int(e.tokens.size()) == n &&
        std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin())) {
      e.last_use = ++tick_;
      return first_slot_ + int(i);
    }
  }
  return -1;
}

int StateSnapshots::reserve(const std::vector<int32_t>& tokens, int n) {
  size_t best = entries_.size();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.pending) continue;
    if (best == entries_.size() || !e.valid ||
        (entries_[best].valid && e.last_use < entries_[best].last_use))
      best = i;
    if (!e.valid) break;
  }
  if (best == entries_.size()) return -1;
  Entry& e = entries_[best];
  e.valid = false;
  e.pending = true;
  e.hash = hash_of(tokens.data(), n);
  e.tokens.assign(tokens.begin(), tokens.begin() + n);
  e.last_use = ++tick_;
  return first_slot_ + int(best);
}

void StateSnapshots::abort() {
  for (Entry& e : entries_)
    if (e.pending) e.pending = false, e.valid = false;
}

void StateSnapshots::commit() {
  for (Entry& e : entries_)
    if (e.pending) e.pending = false, e.valid = true;
}

}  // namespace tzero
