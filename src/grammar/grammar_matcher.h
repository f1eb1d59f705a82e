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
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"

namespace tzero {

class GrammarMatcher {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;
  static constexpr size_t kMaxDepth = 1024;
  static constexpr size_t kMaxStacks = 4096;

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

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
  std::vector<Stack> advance(const std::vector<Stack>& stacks, uint32_t c) const;
  void expand(Stack st, std::vector<Stack>& out) const;
  bool admits_range(const std::vector<Stack>& stacks, uint32_t lo, uint32_t hi) const;
  uint32_t intern(std::vector<Stack> stacks, uint32_t partial, int remaining, int length);

  std::shared_ptr<const Grammar> g_;
  std::vector<State> states_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, KeyHash> ids_;
  uint32_t start_ = kDead;
};

}  // namespace tzero
