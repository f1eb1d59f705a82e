// Embeddings: the final hidden states of a prompt's positions pooled into one vector, then
// L2-normalised, in fixed orders ("pool-v1", docs/DETERMINISM.md), so an embedding's bits
// depend only on those states, never on how the positions were chunked or batched:
//   mean: s[d] = h_0[d] + h_1[d] + ... + h_{n-1}[d], left to right in position order (each
//         addition a float rounding, from the first row), v[d] = s[d] / float(n);
//   cls:  v = h_0 (the first position's state);   last: v = h_{n-1};
//   then the first `dims` components of v are kept (Matryoshka truncation) and normalised:
//   ss = sum over d of double(v[d]) * double(v[d]) in index order (in double), and
//   out[d] = float(double(v[d]) * (1.0 / sqrt(ss))); all zeros stay zeros.
#pragma once

#include <cstdint>
#include <vector>

#include "tzero/types.h"

namespace tzero {

class Pooler {
 public:
  // pooling: mean, cls or last; n_pos: the prompt's positions; n_embd: a state's length.
  Pooler(Pooling pooling, int n_pos, int n_embd);

  // Whether position p's state is needed (and not yet added): mean every position from
  // next_needed() on, cls position 0 and last position n_pos - 1 until added.
  bool wants(int p) const;
  // Adds the state of position p (n_embd floats); positions come in increasing order, each
  // once: p must be next_needed().
  void add(int p, const float* row);
  // The positions already taken in: a recomputation (preemption) need not feed them again.
  int n_added() const { return n_added_; }
  // The first position whose state is still needed (n_pos when none is).
  int next_needed() const;
  bool complete() const { return next_needed() >= n_pos_; }
  // The pooled vector's first dims components (0: all), L2-normalised. Requires complete().
  std::vector<float> result(int dims) const;

 private:
  Pooling pooling_;
  int n_pos_, n_embd_;
  int n_added_ = 0;         // mean: positions 0..n_added_-1 are summed; cls/last: 0 or 1 state
  std::vector<float> acc_;  // (n_embd) the running sum, or the chosen state
};

// v normalised to unit L2 norm in place (pool-v1's order).
void l2_normalize(std::vector<float>& v);

}  // namespace tzero
