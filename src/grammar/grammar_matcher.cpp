#include "grammar/grammar_matcher.h"

#include <algorithm>

#include "base/error.h"

namespace tzero {

size_t GrammarMatcher::KeyHash::operator()(const std::vector<uint32_t>& k) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ k.size();
  for (uint32_t v : k) {
    h ^= v;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  return size_t(h);
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, uint64_t work_limit,
                               size_t max_bytes, const char* what)
    : g_(std::move(grammar)), work_limit_(work_limit), max_bytes_(max_bytes), limit_what_(what) {
  std::vector<Stack> stacks;
  for (uint32_t alt : g_->alternatives[g_->root]) expand(Stack{alt}, stacks);
  start_ = intern(std::move(stacks), 0, 0, 0);
}

void GrammarMatcher::charge(uint64_t units) {
  work_ += units;
  if (work_ > work_limit_) throw GrammarBudgetExceeded(limit_what_);
}

void GrammarMatcher::expand(Stack first, std::vector<Stack>& out) {
  // Depth first, as a recursion over the alternatives would go: the pending stacks are taken
  // from the back, and a rule's alternatives are pushed last one first.
  todo_.clear();
  todo_.push_back(std::move(first));
  while (!todo_.empty()) {
    if (out.size() >= kMaxStacks) return;
    Stack st = std::move(todo_.back());
    todo_.pop_back();
    charge(st.size() + 1);
    while (st.size() <= kMaxDepth) {  // deeper: dropped
      if (st.empty()) {
        out.push_back(std::move(st));
        break;
      }
      const uint32_t pos = st.back();
      const Grammar::Element& e = g_->elements[pos];
      if (e.kind == Grammar::Element::end) {
        st.pop_back();
        continue;
      }
      if (e.kind == Grammar::Element::chars) {
        out.push_back(std::move(st));
        break;
      }
      // A rule: continue after it once it is matched. When nothing follows in this alternative
      // the continuation is popped first, so right recursion (repetitions) keeps stacks flat.
      if (g_->elements[pos + 1].kind == Grammar::Element::end)
        st.pop_back();
      else
        st.back() = pos + 1;
      const std::vector<uint32_t>& alts = g_->alternatives[e.arg];
      for (size_t a = alts.size(); a-- > 0;) {
        Stack child = a == 0 ? std::move(st) : st;
        child.push_back(alts[a]);
        todo_.push_back(std::move(child));
      }
      break;
    }
  }
}

std::vector<GrammarMatcher::Stack> GrammarMatcher::advance(const std::vector<Stack>& stacks,
                                                           uint32_t c) {
  std::vector<Stack> out;
  for (const Stack& st : stacks) {
    charge(1);
    if (st.empty()) continue;
    if (!g_->charsets[g_->elements[st.back()].arg].contains(c)) continue;
    Stack moved = st;
    moved.back() += 1;
    expand(std::move(moved), out);
  }
  return out;
}

bool GrammarMatcher::admits_range(const std::vector<Stack>& stacks, uint32_t lo,
                                  uint32_t hi) const {
  for (const Stack& st : stacks)
    if (!st.empty() && g_->charsets[g_->elements[st.back()].arg].intersects(lo, hi)) return true;
  return false;
}

uint32_t GrammarMatcher::next_slow(uint32_t state, uint8_t byte) {
  const uint32_t t = compute_next(state, byte);  // may add states (and move states_)
  State& s = states_[state];
  if (!s.next) {
    bytes_ += 256 * sizeof(uint32_t);
    s.next = std::make_unique<uint32_t[]>(256);
    std::fill(s.next.get(), s.next.get() + 256, kUnknown);
  }
  s.next[byte] = t;
  return t;
}

uint32_t GrammarMatcher::compute_next(uint32_t state, uint8_t b) {
  const State& s = states_[state];
  uint32_t value = 0;
  int remaining = 0, length = 1;
  if (s.remaining > 0) {
    if ((b & 0xC0) != 0x80) return kDead;
    value = (s.partial << 6) | (b & 0x3Fu);
    remaining = s.remaining - 1;
    length = s.length;
  } else if (b < 0x80) {
    value = b;
  } else if (b >= 0xC2 && b <= 0xDF) {
    value = b & 0x1Fu, remaining = 1, length = 2;
  } else if ((b & 0xF0) == 0xE0) {
    value = b & 0x0Fu, remaining = 2, length = 3;
  } else if (b >= 0xF0 && b <= 0xF4) {
    value = b & 0x07u, remaining = 3, length = 4;
  } else {
    return kDead;  // a continuation byte with no lead, an overlong lead (C0, C1), or not UTF-8
  }
  // The code points this sequence can still become: no overlong form, at most U+10FFFF.
  static constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  const uint32_t lo = std::max(value << (6 * remaining), kMinOfLength[length]);
  const uint32_t hi =
      std::min<uint32_t>((value << (6 * remaining)) | ((1u << (6 * remaining)) - 1), 0x10FFFF);
  if (lo > hi) return kDead;
  if (remaining > 0) {
    // Surrogates (U+D800..U+DFFF) are not characters: a prefix that can only become one is dead.
    uint32_t top = hi;
    if (lo >= 0xD800 && hi <= 0xDFFF) return kDead;
    if (lo < 0xD800 && hi >= 0xD800 && hi <= 0xDFFF) top = 0xD7FF;
    // Half a character: alive while some class admits a character it could complete to.
    if (!admits_range(s.stacks, lo, top)) return kDead;
    charge(s.stacks.size());
    std::vector<Stack> same = s.stacks;
    return intern(std::move(same), value, remaining, length);
  }
  if (value >= 0xD800 && value <= 0xDFFF) return kDead;  // a surrogate is not a character
  std::vector<Stack> out = advance(s.stacks, value);
  if (out.empty()) return kDead;
  return intern(std::move(out), 0, 0, 0);
}

uint32_t GrammarMatcher::intern(std::vector<Stack> stacks, uint32_t partial, int remaining,
                                int length) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::vector<uint32_t> key{partial, uint32_t(remaining), uint32_t(length)};
  for (const Stack& st : stacks) {
    key.push_back(uint32_t(st.size()));
    key.insert(key.end(), st.begin(), st.end());
  }
  charge(key.size());
  if (const auto found = ids_.find(key); found != ids_.end()) return found->second;
  check(states_.size() < kUnknown - 1, "internal: too many grammar states");
  // The key and the stacks hold the same entries; each vector and map node adds its own.
  const size_t added =
      2 * key.size() * sizeof(uint32_t) + stacks.size() * sizeof(Stack) + sizeof(State) + 64;
  if (bytes_ + added > max_bytes_) throw GrammarBudgetExceeded(limit_what_);
  bytes_ += added;
  const auto it = ids_.emplace(std::move(key), uint32_t(states_.size())).first;
  State s;
  s.partial = partial;
  s.remaining = remaining;
  s.length = length;
  for (const Stack& st : stacks) {
    if (st.empty())
      s.accepting = remaining == 0;
    else
      s.can_continue = true;
  }
  if (remaining > 0) s.can_continue = true;
  s.stacks = std::move(stacks);
  states_.push_back(std::move(s));
  return it->second;
}

uint32_t GrammarMatcher::compact(uint32_t keep) {
  std::vector<Stack> stacks = std::move(states_[keep].stacks);
  const uint32_t partial = states_[keep].partial;
  const int remaining = states_[keep].remaining, length = states_[keep].length;
  states_.clear();
  ids_.clear();
  bytes_ = 0;
  std::vector<Stack> first;
  for (uint32_t alt : g_->alternatives[g_->root]) expand(Stack{alt}, first);
  start_ = intern(std::move(first), 0, 0, 0);
  return intern(std::move(stacks), partial, remaining, length);
}

}  // namespace tzero
