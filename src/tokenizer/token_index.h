// Text -> token id lookup for a vocabulary whose texts live elsewhere (views into the GGUF
// mapping). Open addressing with linear probing over (fingerprint, id) slots: one probe of 8
// bytes, then one comparison of text, where std::unordered_map chases two more pointers.
// Loading a 150k-token vocabulary and its merges is dominated by these lookups.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tzero {

class TokenIndex {
 public:
  // Indexes texts[0..n). When a text occurs more than once, the last id wins (as llama.cpp).
  void build(const std::vector<std::string_view>& texts) {
    size_t cap = 16;
    while (cap < texts.size() * 2) cap *= 2;
    slots_.assign(cap, Slot{0, -1});
    mask_ = cap - 1;
    for (size_t i = 0; i < texts.size(); ++i) {
      const uint64_t h = hash(texts[i]);
      for (size_t s = h & mask_;; s = (s + 1) & mask_) {
        Slot& slot = slots_[s];
        if (slot.id < 0) {
          slot = {uint32_t(h >> 32), int32_t(i)};
          break;
        }
        if (slot.fingerprint == uint32_t(h >> 32) && texts[size_t(slot.id)] == texts[i]) {
          slot.id = int32_t(i);
          break;
        }
      }
    }
  }

  // The id of `text`, or -1. `texts` must be the vector given to build().
  int find(std::string_view text, const std::vector<std::string_view>& texts) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(text);
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      const Slot& slot = slots_[s];
      if (slot.id < 0) return -1;
      if (slot.fingerprint == uint32_t(h >> 32) && texts[size_t(slot.id)] == text) return slot.id;
    }
  }

 private:
  struct Slot {
    uint32_t fingerprint;  // high half of the hash
    int32_t id;            // -1: empty
  };
  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace tzero
