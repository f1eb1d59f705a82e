// A compiled Grammar matched over UTF-8 bytes, as a pushdown automaton whose every state is
// interned: a state is the set of parse stacks that are still alive (each stack's top a
// character class to match next, or empty when the root rule is complete) plus the UTF-8
// bytes of a character not yet complete. next(state, byte) is computed once and then read from
// a table, so walking many tokens through the same states (the token mask) costs a lookup per
// byte.
//
// What a state admits depends only on the grammar and the bytes consumed, never on the model,
// the batch or the order states were met in: states are numbered in the order they were
// found, but the numbering is internal (a state's meaning is its stack set).
//
// A stack deeper than kMaxDepth or a state with more than kMaxStacks stacks (a grammar nested
// or ambiguous beyond reason) is cut: the deepest stacks are dropped, deterministically, which
// can only narrow what is admitted.
//
// Cost. Computing a new transition copies and expands parse stacks: its cost is counted in work
// units (one per stack entry written, one per stack), a count that depends only on the grammar
// and the bytes walked, never on the machine or the load. A caller that sets a work limit
// (set_work_limit) gets GrammarBudgetExceeded as soon as the total passes it, from inside the
// computation (one transition of an ambiguous grammar can itself be millions of units), and
// memory_bytes() says what the interned states hold, so a caller can compact before it grows.
// Nothing here recurses: expansion runs on an explicit work list (a chain of 20,000 rules is
// a loop, not 20,000 frames).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"

namespace tzero {

// A grammar needed more matching work (or memory) than its budget allows: the request that
// carries it ends (StopReason::grammar_budget), deterministically at the same token on every
// machine, since work is counted, not timed.
struct GrammarBudgetExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class GrammarMatcher {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;
  static constexpr size_t kMaxDepth = 1024;
  static constexpr size_t kMaxStacks = 4096;

  // work_limit, max_bytes, what: as set_work_limit(), applied from the start state on.
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar, uint64_t work_limit = UINT64_MAX,
                          size_t max_bytes = SIZE_MAX, const char* what = "");

  uint32_t start() const { return start_; }
  // The state after one more byte, or kDead when no stack can take it (the byte does not
  // continue valid UTF-8, or the character it completes or begins matches no class).
  uint32_t next(uint32_t state, uint8_t byte) {
    const uint32_t* table = states_[state].next.get();
    if (table && table[byte] != kUnknown) return table[byte];
    return next_slow(state, byte);
  }
  // The root rule can be complete here (no character pending).
  bool accepting(uint32_t state) const { return states_[state].accepting; }
  // Some stack still wants a character (or a character is half-way).
  bool can_continue(uint32_t state) const { return states_[state].can_continue; }

  size_t n_states() const { return states_.size(); }
  // Forgets every state but `keep` and returns keep's new number (bounds the memory of a long
  // generation; what a state admits does not change).
  uint32_t compact(uint32_t keep);

  // Work units done since construction (compact() does not reset it).
  uint64_t work() const { return work_; }
  // Throw GrammarBudgetExceeded(what) once work() passes limit (UINT64_MAX: never), or once
  // memory_bytes() passes max_bytes while a new state is interned.
  void set_work_limit(uint64_t limit, size_t max_bytes, const char* what) {
    work_limit_ = limit, max_bytes_ = max_bytes, limit_what_ = what;
  }
  // Bytes held by the interned states (their stacks, keys and transition tables), about.
  size_t memory_bytes() const { return bytes_; }

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX - 1;
  using Stack = std::vector<uint32_t>;  // positions in grammar.elements, top last

  struct State {
    std::vector<Stack> stacks;  // sorted, each top a `chars` element, or empty
    uint32_t partial = 0;       // bits of a character whose UTF-8 is not complete yet
    int remaining = 0;          // its continuation bytes still to come
    int length = 0;             // its whole UTF-8 length (2..4) while remaining > 0
    bool accepting = false, can_continue = false;
    std::unique_ptr<uint32_t[]>
        next;  // (256) the state after each byte, kUnknown when not yet computed
  };
  struct KeyHash {
    size_t operator()(const std::vector<uint32_t>& k) const;
  };

  uint32_t next_slow(uint32_t state, uint8_t byte);
  uint32_t compute_next(uint32_t state, uint8_t byte);
  // The stacks after matching code point c, expanded; empty when none matched.
  std::vector<Stack> advance(const std::vector<Stack>& stacks, uint32_t c);
  // Appends the stacks st expands to (each top a `chars` element, or empty), depth first in
  // the order of the alternatives, until `out` holds kMaxStacks.
  void expand(Stack st, std::vector<Stack>& out);
  void charge(uint64_t units);  // work_ += units, GrammarBudgetExceeded past the limit
  bool admits_range(const std::vector<Stack>& stacks, uint32_t lo, uint32_t hi) const;
  uint32_t intern(std::vector<Stack> stacks, uint32_t partial, int remaining, int length);

  std::shared_ptr<const Grammar> g_;
  std::vector<State> states_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, KeyHash> ids_;
  uint32_t start_ = kDead;
  std::vector<Stack> todo_;  // expand()'s work list
  uint64_t work_ = 0, work_limit_ = UINT64_MAX;
  size_t bytes_ = 0, max_bytes_ = SIZE_MAX;
  const char* limit_what_ = "";
};

}  // namespace tzero
