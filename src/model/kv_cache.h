// Key/value storage for the forward pass, in blocks of block_size positions (a paged cache).
// Owned by the caller (never by the weights), so one model serves many sequences.
//
// A sequence sees the store through its block table: position p lives in block
// table[p / block_size], slot p % block_size. Which blocks a sequence got never changes the
// values read back, so paging does not change the bits (KvRows in kernels/ops.h).
//
// F16 storage rounds each written key and value to half precision once (round to nearest even);
// every reader widens exactly, so the values are the same whichever path wrote or reads them.
//
// Models with recurrent layers (Gated DeltaNet hybrids: hparams.recurrent()) keep keys and values
// for their attention layers only, and beside the blocks a recurrent state per sequence: in
// state slots (ForwardBatch::state_slots), each holding, per recurrent layer, the short
// convolution's last K-1 inputs and the delta rule's matrices, and the position the state has
// reached. A state is a function of the tokens before that position only (delta-v1), so a
// snapshot restored at the same position holds the bits a recomputation would write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/hparams.h"

namespace tzero {

enum class KvType { F32, F16 };
KvType parse_kv_type(const std::string& name);  // "f32" or "f16", else tzero::Error

// Model layers [begin, end) (end -1: the last layer): the layers a store holds. A pipeline
// rank (docs/DISTRIBUTED.md) keeps the keys, values and recurrent states of its own layers only.
struct LayerRange {
  int begin = 0, end = -1;
};

class KvStore {
 public:
  // n_state_slots: sequences whose recurrent state it holds at once (ignored, and 0, for models
  // without recurrent layers). Only the layers of `layers` have storage: a pass over others
  // must not touch it.
  KvStore(const HParams& hp, int n_blocks, int block_size, KvType type = KvType::F32,
          int n_state_slots = 1, LayerRange layers = {});
  KvStore(const KvStore&) = delete;  // (its id names one store's contents)
  KvStore& operator=(const KvStore&) = delete;

  // Unique in the process: a pipeline's other ranks keep a mirror of the store under it.
  uint64_t id() const { return id_; }

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  size_t kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
  static size_t bytes_per_block(const HParams& hp, int block_size, KvType type);
  // The recurrent state of one sequence (0 for models without recurrent layers): float32.
  static size_t state_bytes_per_slot(const HParams& hp);

  // ---- recurrent state (hparams.recurrent() models), of recurrent layer `layer` in `slot`:
  int n_state_slots() const { return n_slots_; }
  size_t conv_state_floats() const { return conv_floats_; }
  size_t delta_state_floats() const { return delta_floats_; }
  // (ssm_d_conv - 1, conv_channels): the last inputs of the short convolution, oldest first.
  float* conv_state(int slot, int layer) { return &state_[state_offset(slot, layer)]; }
  // (n_v_heads, head_v_dim, head_k_dim): the delta rule's matrix of each value head, row j of a
  // head is value channel j (delta-v1).
  float* delta_state(int slot, int layer) { return conv_state(slot, layer) + conv_floats_; }
  // The position the state of (slot, layer) has reached: the tokens before it are in it. A
  // pass that feeds position 0 starts from zeros; any other position must equal it.
  int32_t& state_pos(int slot, int layer) { return state_pos_[size_t(slot) * n_rec_ + rec(layer)]; }
  // A copy of a slot's whole state (every recurrent layer, with positions), and its restore:
  // `tzero bench` repeats a measurement from one depth; a prefix cache could keep them.
  std::vector<float> save_state(int slot) const;
  void restore_state(int slot, const std::vector<float>& saved);
  // Slot `to` takes slot `from`'s whole state and positions (a prefix-cache snapshot restored).
  void copy_state(int from, int to);

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
    return ((size_t(block) * parts_ + size_t(which)) * size_t(n_layer_) +
            size_t(kv_layer_[size_t(layer)])) *
           size_t(block_size_) * kv_dim_;
  }
  size_t rec(int layer) const { return size_t(rec_layer_[size_t(layer)]); }
  size_t state_offset(int slot, int layer) const {
    return (size_t(slot) * n_rec_ + rec(layer)) * (conv_floats_ + delta_floats_);
  }

  uint64_t id_;
  int n_layer_;                 // layers with keys and values
  std::vector<int> kv_layer_;   // model layer -> its index among them (-1: recurrent)
  std::vector<int> rec_layer_;  // model layer -> its index among the recurrent ones (-1)
  size_t n_rec_ = 0;            // recurrent layers
  size_t conv_floats_ = 0, delta_floats_ = 0;
  int n_slots_ = 0;
  std::vector<float> state_;        // (n_slots, n_rec, conv + delta floats)
  std::vector<int32_t> state_pos_;  // (n_slots, n_rec)
  int n_blocks_, block_size_;
  size_t kv_dim_;
  size_t parts_;  // 2: keys and values; 1: keys only (MLA)
  KvType type_;
  std::vector<float> f32_;     // (n_blocks, parts [K, V], n_layer, block_size, kv_dim)
  std::vector<uint16_t> f16_;  // the same, in half precision
};

// The cache of one sequence (`tzero run`, chat, bench): one block covering the whole context.
class KvCache {
 public:
  KvCache(const HParams& hp, int n_ctx, KvType type = KvType::F32, LayerRange layers = {})
      : n_ctx_(n_ctx), store_(hp, 1, n_ctx, type, 1, layers) {}
  int n_ctx() const { return n_ctx_; }
  KvStore& store() { return store_; }
  const int32_t* table() const { return &table_; }
  const int32_t* state_slot() const { return &slot_; }  // slot 0 of its store

 private:
  int n_ctx_;
  KvStore store_;
  int32_t table_ = 0;
  int32_t slot_ = 0;
};

}  // namespace tzero
