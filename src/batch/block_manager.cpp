#include "batch/block_manager.h"

#include <xxhash.h>

#include <algorithm>

#include "base/error.h"

namespace tzero {

BlockManager::BlockManager(int n_blocks, int block_size, bool prefix_cache)
    : block_size_(block_size), prefix_cache_(prefix_cache), blocks_(size_t(n_blocks)) {
  check(n_blocks >= 1 && block_size >= 1, "internal: empty block pool");
  // Lowest ids first out of the free list (any order gives the same bits; this one is tidy).
  for (int32_t b = n_blocks - 1; b >= 0; --b) empty_.push_back(b);
}

uint64_t BlockManager::chain_hash(uint64_t parent, const int32_t* tokens, int n) {
  return XXH3_64bits_withSeed(tokens, size_t(n) * sizeof(int32_t), parent);
}

int32_t BlockManager::find_sealed(uint64_t parent, uint64_t hash, const int32_t* tokens) const {
  auto [lo, hi] = registry_.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    const Block& b = blocks_[size_t(it->second)];
    if (b.parent == parent && std::equal(b.tokens.begin(), b.tokens.end(), tokens))
      return it->second;
  }
  return -1;
}

std::vector<int32_t> BlockManager::match_prefix(const std::vector<int32_t>& tokens,
                                                int max_blocks) const {
  std::vector<int32_t> out;
  if (!prefix_cache_) return out;
  uint64_t parent = 0;
  for (int i = 0; i < max_blocks && size_t(i + 1) * size_t(block_size_) <= tokens.size(); ++i) {
    const int32_t* t = &tokens[size_t(i) * size_t(block_size_)];
    const uint64_t h = chain_hash(parent, t, block_size_);
    const int32_t b = find_sealed(parent, h, t);
    if (b < 0) break;
    out.push_back(b);
    parent = h;
  }
  return out;
}

int BlockManager::free_blocks_taken(const std::vector<int32_t>& matched) const {
  int n = 0;
  for (int32_t b : matched) n += blocks_[size_t(b)].ref == 0;
  return n;
}

bool BlockManager::can_allocate(const std::vector<int32_t>& table,
                                const std::vector<int32_t>& matched, int n_tokens) const {
  const int have = int(table.size() + matched.size());
  const int fresh = std::max(0, blocks_for(n_tokens, block_size_) - have);
  return fresh + free_blocks_taken(matched) <= n_free();
}

void BlockManager::acquire(int32_t b) {
  Block& blk = blocks_[size_t(b)];
  if (blk.ref++ == 0 && blk.sealed) evictable_.erase({blk.last_use, b});
}

int32_t BlockManager::take_free_block() {
  int32_t b;
  if (!empty_.empty()) {
    b = empty_.back();
    empty_.pop_back();
  } else {
    check(!evictable_.empty(), "internal: KV block pool exhausted");
    b = evictable_.begin()->second;  // least recently used
    evictable_.erase(evictable_.begin());
    Block& blk = blocks_[size_t(b)];
    auto [lo, hi] = registry_.equal_range(blk.hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == b) {
        registry_.erase(it);
        break;
      }
    blk.sealed = false;
    blk.tokens.clear();
  }
  blocks_[size_t(b)].ref = 1;
  return b;
}

void BlockManager::allocate(std::vector<int32_t>& table, const std::vector<int32_t>& matched,
                            int n_tokens) {
  check(can_allocate(table, matched, n_tokens), "internal: KV allocation without room");
  for (int32_t b : matched) {
    acquire(b);
    table.push_back(b);
  }
  while (int(table.size()) < blocks_for(n_tokens, block_size_)) table.push_back(take_free_block());
}

void BlockManager::seal(const std::vector<int32_t>& table, const std::vector<int32_t>& tokens,
                        int n_computed) {
  if (!prefix_cache_) return;
  uint64_t parent = 0;
  const int n_full = std::min(n_computed / block_size_, int(table.size()));
  for (int i = 0; i < n_full; ++i) {
    Block& blk = blocks_[size_t(table[size_t(i)])];
    const int32_t* t = &tokens[size_t(i) * size_t(block_size_)];
    if (blk.sealed) {
      parent = blk.hash;
      continue;
    }
    const uint64_t h = chain_hash(parent, t, block_size_);
    // The same content may already be sealed in another block (two requests computed the same
    // prefix at once): keep that one registered, this one stays private.
    if (find_sealed(parent, h, t) < 0) {
      blk.sealed = true;
      blk.hash = h;
      blk.parent = parent;
      blk.tokens.assign(t, t + block_size_);
      registry_.emplace(h, table[size_t(i)]);
    }
    parent = h;
  }
}

void BlockManager::free(std::vector<int32_t>& table) {
  // Later blocks of a sequence are less useful as a prefix than earlier ones: free them first
  // so they are evicted first.
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    Block& blk = blocks_[size_t(*it)];
    check(blk.ref > 0, "internal: KV block freed twice");
    if (--blk.ref > 0) continue;
    if (blk.sealed) {
      blk.last_use = ++tick_;
      evictable_.insert({blk.last_use, *it});
    } else {
      empty_.push_back(*it);
    }
  }
  table.clear();
}

}  // namespace tzero
