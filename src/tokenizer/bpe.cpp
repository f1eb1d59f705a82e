#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/vocab.h"

namespace tzero {

BpeModel::BpeModel(const Vocab& vocab, const std::vector<std::string_view>& merges,
                   const PreTokenizerSpec& pre)
    : normalizer_(pre.normalizers), pre_(pre) {
  char_token_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    byte_level::encode(std::string_view(reinterpret_cast<const char*>(&b), 1), ch);
    char_token_[byte_level::byte_to_codepoint(uint8_t(b))] = vocab.find(ch);
  }
  size_t cap = 16;
  while (cap < merges.size() * 2) cap *= 2;
  merges_.assign(cap, Merge{0, -1, -1});
  mask_ = cap - 1;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view m = merges[rank];
    // The separator is the first space after the first character (as llama.cpp reads them).
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    if (sp == std::string_view::npos) {
      ++n_skipped_;
      continue;
    }
    const std::string_view a = m.substr(0, sp), b = m.substr(sp + 1);
    joined.assign(a);
    joined.append(b);
    const int ia = vocab.find(a), ib = vocab.find(b), ir = vocab.find(joined);
    if (ia < 0 || ib < 0 || ir < 0) {
      ++n_skipped_;
      continue;
    }
    const uint64_t k = key(ia, ib);
    for (size_t slot = slot_of(k);; slot = (slot + 1) & mask_) {
      Merge& entry = merges_[slot];
      if (entry.rank < 0) {
        entry = {k, int32_t(rank), ir};
        ++n_merges_;
        break;
      }
      if (entry.key == k) break;  // listed twice: the first listing wins
    }
  }
}

const BpeModel::Merge* BpeModel::find_merge(int32_t a, int32_t b) const {
  const uint64_t k = key(a, b);
  for (size_t slot = slot_of(k);; slot = (slot + 1) & mask_) {
    const Merge& m = merges_[slot];
    if (m.rank < 0) return nullptr;
    if (m.key == k) return &m;
  }
}

namespace {

struct Symbol {
  int32_t id;  // token, -1 when the byte's character is not a token
  int32_t prev, next;
  bool alive;
};

struct Candidate {
  int32_t rank, left, left_id, right_id, result;
  bool operator>(const Candidate& o) const {  // min-heap on (rank, left)
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

void BpeModel::encode_word(const Vocab& vocab, std::string_view word,
                           std::vector<int32_t>& out) const {
  if (pre_.spec().ignore_merges) {
    const int id = vocab.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per byte-level character (each one two bytes of UTF-8 at most).
  thread_local std::vector<Symbol> sym;
  sym.clear();
  for (size_t i = 0; i < word.size();) {
    const unsigned char c = static_cast<unsigned char>(word[i]);
    uint32_t cp = c;
    size_t n = 1;
    if (c >= 0xC0 && i + 1 < word.size()) {
      cp = (uint32_t(c & 0x1F) << 6) | (static_cast<unsigned char>(word[i + 1]) & 0x3F);
      n = 2;
    }
    const int32_t id = cp < char_token_.size() ? char_token_[cp] : -1;
    sym.push_back({id, int32_t(sym.size()) - 1, int32_t(sym.size()) + 1, true});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  thread_local std::vector<Candidate> heap;
  heap.clear();
  const auto greater = std::greater<Candidate>();
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t a = sym[size_t(left)].id, b = sym[size_t(right)].id;
    if (a < 0 || b < 0) return;
    const Merge* m = find_merge(a, b);
    if (!m) return;
    heap.push_back({m->rank, left, a, b, m->result});
    std::push_heap(heap.begin(), heap.end(), greater);
  };
  for (size_t i = 1; i < sym.size(); ++i) consider(int32_t(i) - 1, int32_t(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = sym[size_t(c.left)];
    // Stale when either side has changed since the candidate was made: a symbol's token only
    // ever grows, so equal ids mean unchanged symbols.
    if (!l.alive || l.id != c.left_id || l.next < 0) continue;
    Symbol& r = sym[size_t(l.next)];
    if (r.id != c.right_id) continue;
    l.id = c.result;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[size_t(i)].next) {
    const int32_t id = sym[size_t(i)].id;
    if (id >= 0)
      out.push_back(id);
    else if (vocab.unk() >= 0)
      out.push_back(vocab.unk());
  }
}

void BpeModel::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
  std::string normalized;
  if (!normalizer_.empty()) {
    normalized = normalizer_.normalize(text);
    text = normalized;
  }
  std::string words;
  std::vector<size_t> ends;
  pre_.split(text, words, ends);

  // Words repeat a lot in running text: remember each distinct word's ids for this call.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> store;
  size_t start = 0;
  for (size_t end : ends) {
    const std::string_view w = std::string_view(words).substr(start, end - start);
    start = end;
    const auto it = cache.find(w);
    if (it != cache.end()) {
      out.insert(out.end(), store.begin() + it->second.first,
                 store.begin() + it->second.first + it->second.second);
      continue;
    }
    const size_t before = store.size();
    encode_word(vocab, w, store);
    cache.emplace(w, std::make_pair(uint32_t(before), uint32_t(store.size() - before)));
    out.insert(out.end(), store.begin() + before, store.end());
  }
}

}  // namespace tzero
