#include "model/kv_cache.h"

#include <algorithm>
#include <atomic>

#include "base/error.h"
#include "base/fp16.h"

namespace tzero {

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::F32;
  if (name == "f16") return KvType::F16;
  throw Error("the KV cache type must be f32 or f16, not '" + name + "'");
}

namespace {
uint64_t next_store_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}
}  // namespace

size_t KvStore::bytes_per_block(const HParams& hp, int block_size, KvType type) {
  const size_t n_kv_layers = size_t(std::max(1, hp.n_attention_layers()));
  return (hp.mla() ? 1 : 2) * n_kv_layers * size_t(block_size) * size_t(hp.kv_dim()) *
         (type == KvType::F16 ? 2 : 4);
}

size_t KvStore::state_bytes_per_slot(const HParams& hp) {
  return size_t(hp.n_recurrent_layers()) * (hp.conv_state_floats() + hp.delta_state_floats()) *
         sizeof(float);
}

KvStore::KvStore(const HParams& hp, int n_blocks, int block_size, KvType type, int n_state_slots,
                 LayerRange layers)
    : id_(next_store_id()),
      n_layer_(0),
      n_blocks_(n_blocks),
      block_size_(block_size),
      kv_dim_(size_t(hp.kv_dim())),
      parts_(hp.mla() ? 1 : 2),
      type_(type) {
  check(n_blocks >= 1 && block_size >= 1, "internal: empty KV store");
  const int end = layers.end < 0 ? hp.n_layer : layers.end;
  check(0 <= layers.begin && layers.begin <= end && end <= hp.n_layer,
        "internal: KV store layers out of range");
  for (int il = 0; il < hp.n_layer; ++il) {
    const bool mine = il >= layers.begin && il < end;
    const bool r = mine && hp.recurrent_layer(il), a = mine && hp.attention_layer(il);
    kv_layer_.push_back(a ? n_layer_ : -1);
    rec_layer_.push_back(r ? int(n_rec_) : -1);
    n_rec_ += r ? 1 : 0;
    n_layer_ += a ? 1 : 0;
  }
  if (n_layer_ == 0) n_layer_ = 1;  // no layer attends: one unused layer keeps sizes valid
  if (hp.recurrent()) {  // (a range without recurrent layers still names the batch's slots)
    check(n_state_slots >= 1, "internal: a recurrent model's store needs a state slot");
    n_slots_ = n_state_slots;
  }
  if (n_rec_ > 0) {
    conv_floats_ = hp.conv_state_floats();
    delta_floats_ = hp.delta_state_floats();
    state_.assign(size_t(n_slots_) * n_rec_ * (conv_floats_ + delta_floats_), 0.0f);
    state_pos_.assign(size_t(n_slots_) * n_rec_, 0);
  }
  const size_t n = size_t(n_blocks) * parts_ * size_t(n_layer_) * size_t(block_size) * kv_dim_;
  if (type == KvType::F16)
    f16_.resize(n);
  else
    f32_.resize(n);
}

std::vector<float> KvStore::save_state(int slot) const {
  const size_t per = n_rec_ * (conv_floats_ + delta_floats_);
  std::vector<float> out(per + n_rec_);
  std::copy_n(&state_[size_t(slot) * per], per, out.data());
  for (size_t r = 0; r < n_rec_; ++r) out[per + r] = float(state_pos_[size_t(slot) * n_rec_ + r]);
  return out;
}

void KvStore::restore_state(int slot, const std::vector<float>& saved) {
  const size_t per = n_rec_ * (conv_floats_ + delta_floats_);
  check(saved.size() == per + n_rec_, "internal: a recurrent state of another shape");
  std::copy_n(saved.data(), per, &state_[size_t(slot) * per]);
  for (size_t r = 0; r < n_rec_; ++r)
    state_pos_[size_t(slot) * n_rec_ + r] = int32_t(saved[per + r]);
}

void KvStore::copy_state(int from, int to) {
  if (n_rec_ == 0) return;  // none of this store's layers is recurrent
  const size_t per = n_rec_ * (conv_floats_ + delta_floats_);
  std::copy_n(&state_[size_t(from) * per], per, &state_[size_t(to) * per]);
  std::copy_n(&state_pos_[size_t(from) * n_rec_], n_rec_, &state_pos_[size_t(to) * n_rec_]);
}

void KvStore::write(int layer, int block, int slot, const float* k, const float* v) {
  const size_t ko = offset(block, layer, 0) + size_t(slot) * kv_dim_;
  const size_t vo = offset(block, layer, parts_ - 1) + size_t(slot) * kv_dim_;
  if (type_ == KvType::F32) {
    std::copy_n(k, kv_dim_, &f32_[ko]);
    if (parts_ == 2) std::copy_n(v, kv_dim_, &f32_[vo]);
    return;
  }
  for (size_t i = 0; i < kv_dim_; ++i) f16_[ko + i] = float_to_fp16(k[i]);
  if (parts_ == 2)
    for (size_t i = 0; i < kv_dim_; ++i) f16_[vo + i] = float_to_fp16(v[i]);
}

void KvStore::read(const int32_t* table, int layer, int n, float* k, float* v) const {
  for (int p = 0; p < n; ++p) {
    const int block = table[p / block_size_], slot = p % block_size_;
    const size_t ko = offset(block, layer, 0) + size_t(slot) * kv_dim_;
    const size_t vo = offset(block, layer, parts_ - 1) + size_t(slot) * kv_dim_;
    float* kd = k + size_t(p) * kv_dim_;
    float* vd = v + size_t(p) * kv_dim_;
    if (type_ == KvType::F32) {
      std::copy_n(&f32_[ko], kv_dim_, kd);
      std::copy_n(&f32_[vo], kv_dim_, vd);
    } else {
      for (size_t i = 0; i < kv_dim_; ++i) {
        kd[i] = fp16_to_float(f16_[ko + i]);
        vd[i] = fp16_to_float(f16_[vo + i]);
      }
    }
  }
}

}  // namespace tzero
