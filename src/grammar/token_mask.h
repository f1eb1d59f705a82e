// Which tokens may come next under a grammar: the token mask of constrained decoding.
//
// TokenTrie holds every token's text as a byte trie (built once per vocabulary). A
// TokenConstraint walks it from the grammar's current state, pruning a subtree at the first
// byte no parse can take, so the tokens allowed are exactly those whose whole text the grammar
// admits next (a token may end half-way through a character). The end tokens (EOS, EOT, the
// request's stop tokens) are allowed exactly when the grammar is complete.
//
// The mask is a function of the grammar state and the vocabulary only, so it keeps the
// reproducibility contract: masked logits are the raw row with -inf at the refused tokens,
// and the sampler (sampler-v2) runs on them unchanged. Masks are cached per state (at most 16 MiB
// of them per request, and 20,000 matcher states, before the caches start again).
//
// Cost (docs/GRAMMAR.md, "Cost"). Masks are computed on the engine's thread, between two forward
// passes that every request in the batch shares, so one request's grammar must not be allowed to
// take unbounded time there. GrammarBudget bounds the matcher's counted work per token (the mask
// and the token's acceptance) and the memory its states hold. Work is counted, not timed, so a
// grammar over budget fails at the same token on every machine and under any load:
// GrammarBudgetExceeded from the constructor (the start state alone is over budget) or from
// allowed(), any_allowed(), apply() and accept().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/vocab.h"

namespace tzero {

class TokenTrie {
 public:
  // Every token with text (normal, byte and user-defined ones); control and unused tokens have
  // none and are only ever allowed as end tokens.
  explicit TokenTrie(const Vocab& vocab);

  struct Node {
    uint32_t first_child = 0, n_children = 0;  // children are contiguous in nodes
    uint32_t first_token = 0, n_tokens = 0;    // tokens whose text ends here, in token_ids
    uint8_t byte = 0;                          // the byte leading here from the parent
  };
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes_[0] is the root
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  const std::string& text(int32_t token) const { return texts_[size_t(token)]; }
  int n_vocab() const { return int(texts_.size()); }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  std::vector<std::string> texts_;  // (n_vocab) each token's bytes as the text stream writes them
};

// What one request's grammar may cost.
struct GrammarBudget {
  // Matcher work units (grammar_matcher.h) to compute one token's mask and accept the token.
  // A JSON-schema grammar (bench_grammar's 9-property record) needs at most 17,000 per token on
  // 32k and 152k vocabularies; a grammar that keeps thousands of ambiguous parses alive
  // (`x ::= [a-z ] x "b" | [a-z ] x "c" | "."`) needs 14 million by its fourth token. A unit
  // is a few nanoseconds: docs/GRAMMAR.md, "Cost", has the measurements.
  uint64_t max_step_work = 2'000'000;
  // Bytes the matcher's states may hold between tokens (compacted to the current state beyond);
  // one token may add as much again before it fails.
  size_t max_state_bytes = size_t(32) << 20;
};

// What GrammarBudgetExceeded says for this budget (one sentence, lower case first).
std::string grammar_budget_message(const GrammarBudget& budget = {});

class TokenConstraint {
 public:
  // end_tokens: the tokens that end the request (allowed only when the grammar is complete).
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                  std::vector<int32_t> end_tokens, GrammarBudget budget = {});

  // (n_vocab / 64 rounded up) bit i set: token i may come next. Valid until the next call.
  const std::vector<uint64_t>& allowed();
  bool any_allowed();  // false: the grammar admits no token here (a dead end)
  // Consumes a token the mask allowed (an end token consumes nothing).
  void accept(int32_t token);
  bool complete() const { return matcher_.accepting(state_); }
  size_t n_states() const { return matcher_.n_states(); }  // interned so far (since a compaction)
  uint64_t work() const { return matcher_.work(); }        // matcher work units so far

  // Sets row[i] = -inf for every refused token i (row: n floats, n >= the trie's n_vocab; ids
  // beyond it are refused too).
  void apply(float* row, int n);

 private:
  const std::vector<uint64_t>& compute(uint32_t state);
  void limit_next_token();  // the budget of the next mask and acceptance starts here

  GrammarBudget budget_;
  std::string budget_message_;  // what GrammarBudgetExceeded says
  GrammarMatcher matcher_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_tokens_;
  uint32_t state_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> masks_;  // per state
  size_t cached_bytes_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> walk_;  // (trie node, state) work stack
};

}  // namespace tzero
