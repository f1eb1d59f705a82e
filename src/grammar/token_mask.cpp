#include "grammar/token_mask.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>

#include "base/error.h"

namespace tzero {

namespace {
// Per request: masks cached (about 850 of a 152k vocabulary) and matcher states kept (each
// with its 1 KiB transition table) before the caches are dropped. Dropping changes no result.
constexpr size_t kMaxCachedMaskBytes = size_t(16) << 20;
constexpr size_t kMaxStates = 20000;
}  // namespace

TokenTrie::TokenTrie(const Vocab& vocab) {
  const int n = vocab.n_tokens();
  texts_.resize(size_t(n));
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) {
    const TokenType t = vocab.type(i);
    if (t != TokenType::Normal && t != TokenType::Byte && t != TokenType::UserDefined) continue;
    texts_[size_t(i)] = vocab.token_to_piece(i, false);
    if (!texts_[size_t(i)].empty()) ids.push_back(i);
  }
  // Sorted by text (then id), a node's tokens and children are contiguous ranges.
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    const std::string &x = texts_[size_t(a)], &y = texts_[size_t(b)];
    return x != y ? x < y : a < b;
  });
  struct Pending {
    uint32_t node;
    size_t lo, hi, depth;
  };
  std::deque<Pending> queue{{0, 0, ids.size(), 0}};
  nodes_.push_back({});
  while (!queue.empty()) {
    const Pending p = queue.front();
    queue.pop_front();
    size_t i = p.lo;
    Node& node = nodes_[p.node];
    node.first_token = uint32_t(token_ids_.size());
    while (i < p.hi && texts_[size_t(ids[i])].size() == p.depth) token_ids_.push_back(ids[i++]);
    node.n_tokens = uint32_t(token_ids_.size()) - node.first_token;
    node.first_child = uint32_t(nodes_.size());
    std::vector<Pending> children;
    while (i < p.hi) {
      const uint8_t b = uint8_t(texts_[size_t(ids[i])][p.depth]);
      size_t j = i;
      while (j < p.hi && uint8_t(texts_[size_t(ids[j])][p.depth]) == b) ++j;
      children.push_back({uint32_t(nodes_.size() + children.size()), i, j, p.depth + 1});
      i = j;
    }
    nodes_[p.node].n_children = uint32_t(children.size());
    for (const Pending& c : children) {
      Node child;
      child.byte = uint8_t(texts_[size_t(ids[c.lo])][p.depth]);
      nodes_.push_back(child);
      queue.push_back(c);
    }
  }
}

std::string grammar_budget_message(const GrammarBudget& b) {
  return "the grammar is too costly to match: one token needed more than " +
         std::to_string(b.max_step_work) + " units of matching work or " +
         std::to_string(2 * b.max_state_bytes >> 20) +
         " MiB of parse states (it keeps too many ambiguous parses of the same text alive; "
         "see docs/GRAMMAR.md, \"Cost\")";
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenTrie> trie,
                                 std::vector<int32_t> end_tokens, GrammarBudget budget)
    : budget_(budget),
      budget_message_(grammar_budget_message(budget)),
      matcher_(std::move(grammar), budget.max_step_work, 2 * budget.max_state_bytes,
               budget_message_.c_str()),
      trie_(std::move(trie)),
      end_tokens_(std::move(end_tokens)),
      state_(matcher_.start()) {
  limit_next_token();
}

void TokenConstraint::limit_next_token() {
  const uint64_t w = matcher_.work();
  matcher_.set_work_limit(
      w > UINT64_MAX - budget_.max_step_work ? UINT64_MAX : w + budget_.max_step_work,
      2 * budget_.max_state_bytes, budget_message_.c_str());
}

const std::vector<uint64_t>& TokenConstraint::compute(uint32_t state) {
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  if (cached_bytes_ > kMaxCachedMaskBytes) masks_.clear(), cached_bytes_ = 0;
  const size_t words = (size_t(trie_->n_vocab()) + 63) / 64;
  std::vector<uint64_t> mask(words, 0);
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  const std::vector<int32_t>& ids = trie_->token_ids();
  walk_.clear();
  walk_.push_back({0, state});
  while (!walk_.empty()) {
    const auto [n, s] = walk_.back();
    walk_.pop_back();
    const TokenTrie::Node& node = nodes[n];
    for (uint32_t k = 0; k < node.n_tokens; ++k) {
      const int32_t t = ids[node.first_token + k];
      mask[size_t(t) / 64] |= uint64_t(1) << (t % 64);
    }
    for (uint32_t c = node.first_child; c < node.first_child + node.n_children; ++c) {
      const uint32_t next = matcher_.next(s, nodes[c].byte);
      if (next != GrammarMatcher::kDead) walk_.push_back({c, next});
    }
  }
  if (matcher_.accepting(state))
    for (int32_t t : end_tokens_)
      if (t >= 0 && t < trie_->n_vocab()) mask[size_t(t) / 64] |= uint64_t(1) << (t % 64);
  cached_bytes_ += words * sizeof(uint64_t);
  return masks_.emplace(state, std::move(mask)).first->second;
}

const std::vector<uint64_t>& TokenConstraint::allowed() {
  return compute(state_);
}

bool TokenConstraint::any_allowed() {
  const std::vector<uint64_t>& m = compute(state_);
  return std::any_of(m.begin(), m.end(), [](uint64_t w) { return w != 0; });
}

void TokenConstraint::accept(int32_t token) {
  if (std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end()) return;
  check(token >= 0 && token < trie_->n_vocab(), "internal: grammar token out of range");
  for (const char c : trie_->text(token)) {
    state_ = matcher_.next(state_, uint8_t(c));
    check(state_ != GrammarMatcher::kDead, "internal: a token the grammar refused was accepted");
  }
  if (matcher_.n_states() > kMaxStates || matcher_.memory_bytes() > budget_.max_state_bytes) {
    state_ = matcher_.compact(state_);
    masks_.clear(), cached_bytes_ = 0;
  }
  limit_next_token();
}

void TokenConstraint::apply(float* row, int n) {
  const std::vector<uint64_t>& m = compute(state_);
  const int nv = std::min(n, trie_->n_vocab());
  for (int i = 0; i < nv; i += 64) {
    const uint64_t w = m[size_t(i) / 64];
    if (w == ~uint64_t(0)) continue;
    const int end = std::min(nv, i + 64);
    for (int j = i; j < end; ++j)
      if (!((w >> (j - i)) & 1)) row[j] = -INFINITY;
  }
  for (int i = nv; i < n; ++i) row[i] = -INFINITY;
}

}  // namespace tzero
