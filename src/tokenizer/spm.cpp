// SentencePiece-style tokenization (tokenizer.ggml.model = "llama"), as llama.cpp and
// Hugging Face's slow Llama tokenizer do it:
//   1. spaces become U+2581 "▁" (the caller has added the dummy prefix space);
//   2. the text is split into UTF-8 characters;
//   3. repeatedly, the adjacent pair whose concatenation is a token with the highest score
//      is merged (ties: the leftmost pair);
//   4. each final piece is its token, or else its bytes as <0xXX> byte tokens, or else <unk>.
//
// Speed, without changing the result: when no token has a "▁" right after another character
// (true of SentencePiece vocabularies trained with whitespace splitting, Llama's included;
// checked at load, see spm_segmentable_), no merge can join the text before such a "▁" to the
// text from it on. The text is then cut there into words that are merged independently, each
// distinct word once per call. Otherwise the whole text is merged at once.
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace tzero {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁"

size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xe) return 3;
  if ((c >> 3) == 0x1e) return 4;
  return 1;  // invalid lead byte: a piece of its own
}

struct Symbol {
  int prev, next;
  size_t start, len;  // len == 0: merged away
};

struct Bigram {
  int left, right;
  float score;
  size_t len;                              // of the merged text, to detect stale entries
  bool operator<(const Bigram& o) const {  // priority_queue pops the largest
    if (score != o.score) return score < o.score;
    return left > o.left;
  }
};

}  // namespace

bool Vocab::spm_segmentable(const std::vector<std::string_view>& texts) {
  for (std::string_view t : texts)
    for (size_t i = t.find(kSpace, 1); i != std::string_view::npos; i = t.find(kSpace, i + 1))
      if (i < kSpace.size() || t.substr(i - kSpace.size(), kSpace.size()) != kSpace) return false;
  return true;
}

void Vocab::merge_spm(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> sym;
  for (size_t i = 0; i < text.size();) {
    size_t n = std::min(utf8_len(static_cast<unsigned char>(text[i])), text.size() - i);
    sym.push_back({int(sym.size()) - 1, int(sym.size()) + 1, i, n});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  std::priority_queue<Bigram> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view s(text.data() + sym[size_t(left)].start,
                             sym[size_t(left)].len + sym[size_t(right)].len);
    const int id = find(s);
    if (id < 0) return;
    queue.push({left, right, scores_[size_t(id)], s.size()});
  };
  for (size_t i = 1; i < sym.size(); ++i) try_add(int(i) - 1, int(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[size_t(b.left)];
    Symbol& r = sym[size_t(b.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i >= 0; i = sym[size_t(i)].next) {
    const std::string_view s(text.data() + sym[size_t(i)].start, sym[size_t(i)].len);
    const int id = find(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : s) {
      const int bt = byte_tokens_[c];
      if (bt >= 0)
        out.push_back(bt);
      else if (unk_ >= 0)
        out.push_back(unk_);
    }
  }
}

void Vocab::tokenize_spm(std::string_view raw, std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + 16);
  for (char c : raw) {
    if (c == ' ')
      text.append(kSpace);
    else
      text += c;
  }
  if (!spm_segmentable_) {
    merge_spm(text, out);
    return;
  }
  // Words start at each "▁" that follows another character.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache;  // -> ids in `store`
  std::vector<int32_t> store;
  const std::string_view all(text);
  size_t start = 0;
  auto word = [&](size_t end) {
    const std::string_view w = all.substr(start, end - start);
    start = end;
    if (w.empty()) return;
    const auto it = cache.find(w);
    if (it != cache.end()) {
      out.insert(out.end(), store.begin() + long(it->second.first),
                 store.begin() + long(it->second.first + it->second.second));
      return;
    }
    const size_t before = store.size();
    merge_spm(w, store);
    cache.emplace(w, std::make_pair(before, store.size() - before));
    out.insert(out.end(), store.begin() + long(before), store.end());
  };
  for (size_t i = all.find(kSpace, 1); i != std::string_view::npos; i = all.find(kSpace, i + 1))
    if (i < kSpace.size() || all.substr(i - kSpace.size(), kSpace.size()) != kSpace) word(i);
  word(all.size());
}

}  // namespace tzero
