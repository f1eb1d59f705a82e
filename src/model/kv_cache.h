// Key/value storage for the forward pass, in blocks of block_size positions (a paged cache).
// Owned by the caller (never by the weights), so one model serves many sequences.
//
// A sequence sees the store through its block table: position p lives in block
// table[p / block_size], slot p % block_size. Which blocks a sequence got never changes the
// values read back, so paging does not change the bits (KvRows in kernels/ops.h).
//
// F16 storage rounds each written key and value to half precision once (round to nearest even);
// every reader widens exactly, so the values are the same whichever path wrote or reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.h"

namespace tzero {

enum class KvType { F32, F16 };
KvType parse_kv_type(const std::string& name);  // "f32" or "f16", else tzero::Error

class KvStore {
 public:
  KvStore(const HParams& hp, int n_blocks, int block_size, KvType type = KvType::F32);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  size_t kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
  static size_t bytes_per_block(const HParams& hp, int block_size, KvType type);

  // Stores one position's key and value rows (kv_dim floats each). A key-only store (MLA: the
  // value is a prefix of the key row) ignores v, and its value rows are its key rows.
  void write(int layer, int block, int slot, const float* k, const float* v);

  // F32 storage: the first key (value) row of `layer` in `block`; rows of a block are
  // consecutive with stride kv_dim.
  const float* k_rows(int block, int layer) const { return &f32_[offset(block, layer, 0)]; }
  const float* v_rows(int block, int layer) const {
    return &f32_[offset(block, layer, parts_ - 1)];
  }
  // Any storage: widens rows [0, n) of `layer` for the block table into k and v
  // ((n, kv_dim) floats each).
  void read(const int32_t* table, int layer, int n, float* k, float* v) const;

 private:
  size_t offset(int block, int layer, int which) const {
    return ((size_t(block) * parts_ + size_t(which)) * size_t(n_layer_) + size_t(layer)) *
           size_t(block_size_) * kv_dim_;
  }

  int n_layer_, n_blocks_, block_size_;
  size_t kv_dim_;
  size_t parts_;  // 2: keys and values; 1: keys only (MLA)
  KvType type_;
  std::vector<float> f32_;     // (n_blocks, parts [K, V], n_layer, block_size, kv_dim)
  std::vector<uint16_t> f16_;  // the same, in half precision
};

// The cache of one sequence (`tzero run`, chat, bench): one block covering the whole context.
class KvCache {
 public:
  KvCache(const HParams& hp, int n_ctx, KvType type = KvType::F32)
      : n_ctx_(n_ctx), store_(hp, 1, n_ctx, type) {}
  int n_ctx() const { return n_ctx_; }
  KvStore& store() { return store_; }
  const int32_t* table() const { return &table_; }

 private:
  int n_ctx_;
  KvStore store_;
  int32_t table_ = 0;
};

}  // namespace tzero
