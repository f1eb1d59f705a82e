// The paged KV cache's bookkeeping: which of the pool's blocks each sequence holds, and which
// free blocks still hold a reusable prompt prefix (prefix caching).
//
// A block is full when all its block_size positions are computed. A full block is "sealed":
// registered under a hash of its tokens chained with its parent block's hash, so a later
// request whose prompt starts with the same tokens reuses it instead of recomputing. Reuse is
// exact, not probable: the registry compares the tokens too, so a hash collision only misses.
// Keys and values depend only on the tokens before them (the forward pass is batch and chunk
// invariant), so a reused block holds the very bits recomputation would write.
//
// Reference counts: a block is held by every sequence whose table lists it. At zero it is free;
// a sealed free block stays findable until it is evicted, least recently used first, when an
// allocation needs a block and no never-sealed free block is left.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tzero {

class BlockManager {
 public:
  BlockManager(int n_blocks, int block_size, bool prefix_cache);

  int n_blocks() const { return int(blocks_.size()); }
  int block_size() const { return block_size_; }
  int n_free() const { return int(empty_.size() + evictable_.size()); }  // allocatable now
  int n_cached_free() const { return int(evictable_.size()); }
  int n_used() const { return n_blocks() - n_free(); }

  static int blocks_for(int n_tokens, int block_size) {
    return (n_tokens + block_size - 1) / block_size;
  }

  // The leading full blocks of `tokens` that are sealed in the registry (at most max_blocks),
  // as block ids; takes no reference.
  std::vector<int32_t> match_prefix(const std::vector<int32_t>& tokens, int max_blocks) const;
  // How many free blocks acquiring these matched blocks takes out of the free pool.
  int free_blocks_taken(const std::vector<int32_t>& matched) const;

  // Whether `table` can grow to cover n_tokens positions after acquiring `matched` first.
  bool can_allocate(const std::vector<int32_t>& table, const std::vector<int32_t>& matched,
                    int n_tokens) const;
  // Appends matched (taking a reference) then fresh blocks until table covers n_tokens.
  // Requires can_allocate.
  void allocate(std::vector<int32_t>& table, const std::vector<int32_t>& matched, int n_tokens);
  bool can_append(const std::vector<int32_t>& table, int n_tokens) const {
    return can_allocate(table, {}, n_tokens);
  }
  void append(std::vector<int32_t>& table, int n_tokens) { allocate(table, {}, n_tokens); }

  // Seals the table's blocks that n_computed positions fill (tokens[0..n_computed) are their
  // contents). Idempotent; blocks already sealed stay as they are.
  void seal(const std::vector<int32_t>& table, const std::vector<int32_t>& tokens, int n_computed);

  // Drops the table's references (the table is cleared).
  void free(std::vector<int32_t>& table);

 private:
  struct Block {
    int ref = 0;
    bool sealed = false;
    uint64_t hash = 0;            // when sealed
    std::vector<int32_t> tokens;  // when sealed: the block's tokens (collision check)
    uint64_t parent = 0;          // when sealed: the parent block's hash (0 for the first)
    uint64_t last_use = 0;        // when freed, for LRU eviction
  };
  static uint64_t chain_hash(uint64_t parent, const int32_t* tokens, int n);
  int32_t find_sealed(uint64_t parent, uint64_t hash, const int32_t* tokens) const;
  int32_t take_free_block();
  void acquire(int32_t b);

  int block_size_;
  bool prefix_cache_;
  uint64_t tick_ = 0;
  std::vector<Block> blocks_;
  std::vector<int32_t> empty_;                           // free, never sealed (or evicted)
  std::set<std::pair<uint64_t, int32_t>> evictable_;     // free and sealed, by last use
  std::unordered_multimap<uint64_t, int32_t> registry_;  // hash -> sealed block
};

}  // namespace tzero
