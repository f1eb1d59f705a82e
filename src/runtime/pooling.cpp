// pool-v1 (runtime/pooling.h).
#include "runtime/pooling.h"

#include <cmath>

#include "base/error.h"

namespace tzero {

Pooler::Pooler(Pooling pooling, int n_pos, int n_embd)
    : pooling_(pooling), n_pos_(n_pos), n_embd_(n_embd), acc_(size_t(n_embd), 0.0f) {
  check(pooling == Pooling::mean || pooling == Pooling::cls || pooling == Pooling::last,
        "internal: a Pooler needs mean, cls or last pooling");
  check(n_pos >= 1 && n_embd >= 1, "internal: a Pooler needs positions and a state length");
}

int Pooler::next_needed() const {
  switch (pooling_) {
    case Pooling::mean:
      return n_added_;
    case Pooling::cls:
      return n_added_ == 0 ? 0 : n_pos_;
    default:  // last
      return n_added_ == 0 ? n_pos_ - 1 : n_pos_;
  }
}

bool Pooler::wants(int p) const {
  const int next = next_needed();
  return pooling_ == Pooling::mean ? p >= next && p < n_pos_ : p == next;
}

void Pooler::add(int p, const float* row) {
  check(p == next_needed(), "internal: pooled position out of order");
  if (pooling_ == Pooling::mean && n_added_ > 0) {
    for (int d = 0; d < n_embd_; ++d) acc_[size_t(d)] += row[d];
  } else {
    for (int d = 0; d < n_embd_; ++d) acc_[size_t(d)] = row[d];
  }
  ++n_added_;
}

std::vector<float> Pooler::result(int dims) const {
  check(complete(), "internal: an embedding read before its positions were pooled");
  const int n = dims > 0 && dims < n_embd_ ? dims : n_embd_;
  std::vector<float> v(acc_.begin(), acc_.begin() + n);
  if (pooling_ == Pooling::mean) {
    const float count = float(n_pos_);
    for (float& x : v) x = x / count;
  }
  l2_normalize(v);
  return v;
}

void l2_normalize(std::vector<float>& v) {
  double ss = 0.0;
  for (float x : v) ss += double(x) * double(x);
  if (!(ss > 0.0)) return;
  const double inv = 1.0 / std::sqrt(ss);
  for (float& x : v) x = float(double(x) * inv);
}

}  // namespace tzero
