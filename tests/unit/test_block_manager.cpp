// The paged KV cache's bookkeeping (src/batch/block_manager.h): allocation and free counts,
// exact prefix matching (content and parent, not only the hash), LRU eviction of cached blocks.
#include <gtest/gtest.h>

#include "batch/block_manager.h"

namespace tzero {
namespace {

std::vector<int32_t> seq(std::initializer_list<int32_t> t) {
  return std::vector<int32_t>(t);
}

// Proves: allocation takes exactly the blocks the tokens need, refuses beyond the pool, and
// free returns every block (the pool's free count goes back to full).
TEST(BlockManager, AllocateAndFreeCount) {
  BlockManager bm(5, 4, true);
  std::vector<int32_t> a, b;
  EXPECT_TRUE(bm.can_append(a, 9));
  bm.append(a, 9);  // 3 blocks
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(bm.n_free(), 2);
  EXPECT_FALSE(bm.can_append(b, 9));
  EXPECT_TRUE(bm.can_append(b, 8));
  bm.append(a, 12);  // still 3 blocks
  EXPECT_EQ(a.size(), 3u);
  bm.append(b, 8);
  EXPECT_EQ(bm.n_free(), 0);
  EXPECT_FALSE(bm.can_append(a, 13));
  bm.free(a);
  bm.free(b);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(bm.n_free(), 5);
  EXPECT_EQ(bm.n_used(), 0);
}

// Proves: a sealed prefix is found block by block only while the tokens are equal: a
// difference in the last token of a block, or in an earlier block (the parent), stops the
// match; partial blocks are never sealed; with the cache off nothing matches.
TEST(BlockManager, PrefixMatchIsExact) {
  BlockManager bm(8, 4, true);
  const auto t = seq({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  std::vector<int32_t> a;
  bm.append(a, 10);
  bm.seal(a, t, 10);  // blocks 0 and 1 full, block 2 partial
  EXPECT_EQ(bm.match_prefix(t, 10), (std::vector<int32_t>{a[0], a[1]}));
  EXPECT_EQ(bm.match_prefix(t, 1).size(), 1u);
  EXPECT_EQ(bm.match_prefix(seq({1, 2, 3, 4, 5, 6, 7, 99, 9}), 10).size(), 1u);
  EXPECT_EQ(bm.match_prefix(seq({1, 2, 3, 99, 5, 6, 7, 8}), 10).size(), 0u);
  EXPECT_EQ(bm.match_prefix(seq({0, 2, 3, 4, 5, 6, 7, 8}), 10).size(), 0u);
  // The second block's content after a different first block is another prefix.
  EXPECT_EQ(bm.match_prefix(seq({9, 9, 9, 9, 5, 6, 7, 8}), 10).size(), 0u);
  BlockManager off(8, 4, false);
  std::vector<int32_t> c;
  off.append(c, 10);
  off.seal(c, t, 10);
  EXPECT_TRUE(off.match_prefix(t, 10).empty());
}

// Proves: matched blocks are shared (a reference each), stay cached after their holders free
// them, and count as allocatable; eviction takes the least recently freed first, and an
// evicted block is no longer found.
TEST(BlockManager, CachedBlocksAreSharedAndEvictedLru) {
  BlockManager bm(4, 2, true);
  const auto t1 = seq({1, 2, 3, 4}), t2 = seq({5, 6, 7, 8});
  std::vector<int32_t> a, b;
  bm.append(a, 4);
  bm.seal(a, t1, 4);
  const auto m = bm.match_prefix(t1, 2);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(bm.free_blocks_taken(m), 0);  // held by a: sharing takes nothing from the pool
  bm.allocate(b, m, 4);
  EXPECT_EQ(bm.n_free(), 2);
  bm.free(a);
  EXPECT_EQ(bm.n_free(), 2);  // still held by b
  bm.free(b);
  EXPECT_EQ(bm.n_free(), 4);
  EXPECT_EQ(bm.n_cached_free(), 2);
  EXPECT_EQ(bm.free_blocks_taken(bm.match_prefix(t1, 2)), 2);

  std::vector<int32_t> c;
  bm.append(c, 4);  // the two never-sealed blocks
  bm.seal(c, t2, 4);
  bm.free(c);
  EXPECT_EQ(bm.n_cached_free(), 4);
  // t1's blocks were freed before t2's: a new allocation evicts them first (second block
  // first: b freed its blocks last to first).
  std::vector<int32_t> d;
  bm.append(d, 2);
  EXPECT_EQ(bm.match_prefix(t1, 2).size(), 1u);
  EXPECT_EQ(bm.match_prefix(t2, 2).size(), 2u);
  bm.append(d, 4);
  EXPECT_EQ(bm.match_prefix(t1, 2).size(), 0u);
  EXPECT_EQ(bm.match_prefix(t2, 2).size(), 2u);
  bm.free(d);
}

}  // namespace
}  // namespace tzero
