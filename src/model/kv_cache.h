// The key/value cache of one sequence: contiguous float32 rows per layer and position.
// Owned by the caller (never by the weights), so one model serves many sequences.
#pragma once

#include <cstddef>
#include <vector>

#include "model/hparams.h"

namespace tz {

class KvCache {
 public:
  KvCache(const HParams& hp, int n_ctx)
      : n_ctx_(n_ctx),
        kv_dim_(size_t(hp.kv_dim())),
        k_(size_t(hp.n_layer) * size_t(n_ctx) * kv_dim_),
        v_(k_.size()) {}

  int n_ctx() const { return n_ctx_; }
  // (kv_dim) rows; positions of one layer are consecutive, stride kv_dim.
  float* k(int layer, int pos) {
    return &k_[(size_t(layer) * size_t(n_ctx_) + size_t(pos)) * kv_dim_];
  }
  float* v(int layer, int pos) {
    return &v_[(size_t(layer) * size_t(n_ctx_) + size_t(pos)) * kv_dim_];
  }

 private:
  int n_ctx_;
  size_t kv_dim_;
  std::vector<float> k_;  // (n_layer, n_ctx, kv_dim)
  std::vector<float> v_;  // (n_layer, n_ctx, kv_dim)
};

}  // namespace tz
