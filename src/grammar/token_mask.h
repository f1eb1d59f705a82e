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
#pragma once

#include <cstdint>
#include <memory>
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

class TokenConstraint {
 public:
  // end_tokens: the tokens that end the request (allowed only when the grammar is complete).
  TokenConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                  std::vector<int32_t> end_tokens);

  // (n_vocab / 64 rounded up) bit i set: token i may come next. Valid until the next call.
  const std::vector<uint64_t>& allowed();
  bool any_allowed();  // false: the grammar admits no token here (a dead end)
  // Consumes a token the mask allowed (an end token consumes nothing).
  void accept(int32_t token);
  bool complete() const { return matcher_.accepting(state_); }
  size_t n_states() const { return matcher_.n_states(); }  // interned so far (since a compaction)

  // Sets row[i] = -inf for every refused token i (row: n floats, n >= the trie's n_vocab; ids
  // beyond it are refused too).
  void apply(float* row, int n);

 private:
  const std::vector<uint64_t>& compute(uint32_t state);

  GrammarMatcher matcher_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_tokens_;
  uint32_t state_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> masks_;  // per state
  size_t cached_bytes_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> walk_;  // (trie node, state) work stack
};

}  // namespace tzero
