// Scalar reference kernels of the non-matmul ops, with their canonical orders ("ops-v1").
#pragma once

#include <cstddef>
#include <vector>

namespace tzero {

// RMSNorm: ss = sum of x[k]*x[k] in the 16-lane fma order of dot_f32_ref (dot.h);
// mean = ss / float(n); scale = 1 / sqrtf(mean + eps); out[i] = (x[i] * scale) * w[i].
// out may alias x.
void rmsnorm_ref(const float* x, const float* w, float eps, size_t n, float* out);

// Rotary position embedding tables, built once in double and rounded once to float:
// theta(pos, i) = pos * base^(-2i / n_rot) for i < n_rot / 2.
class RopeTable {
 public:
  RopeTable(int n_rot, int n_pos, double base);
  int n_rot() const { return n_rot_; }
  int n_pos() const { return n_pos_; }
  const float* cos_sin(int pos) const { return &table_[size_t(pos) * size_t(n_rot_)]; }

 private:
  int n_rot_, n_pos_;
  std::vector<float> table_;  // (n_pos, n_rot / 2, 2): cos, sin
};

// Rotates the first n_rot elements of one head vector in place. Pairs are (2i, 2i+1) in the
// interleaved layout (llama) and (i, i + n_rot/2) in the neox layout (qwen2, qwen3).
// With c, s from the table: a' = a*c - b*s, b' = a*s + b*c, each product rounded, no FMA.
void rope_ref(float* x, int pos, const RopeTable& table, bool neox);

// Cached key or value rows of one head, stored in blocks of block_size positions (the paged KV
// cache; a contiguous cache is one block): row t starts at
// blocks[t / block_size] + (t % block_size) * stride.
struct KvRows {
  const float* const* blocks;
  size_t block_size;
  size_t stride;  // floats between consecutive rows of a block
  const float* row(size_t t) const { return blocks[t / block_size] + (t % block_size) * stride; }
  // Calls f(first row, row count) for the runs of consecutive rows covering rows [0, n).
  template <typename F>
  void for_each_run(size_t n, F&& f) const {
    for (size_t t0 = 0, b = 0; t0 < n; t0 += block_size, ++b)
      f(blocks[b], t0, n - t0 < block_size ? n - t0 : block_size);
  }
};

// Every row in one block (a contiguous cache); *base must outlive the KvRows.
inline KvRows single_block(const float* const* base, size_t stride) {
  return KvRows{base, ~size_t(0), stride};
}

// Causal attention of one query head over n_kv cached positions (version "attn-v1"):
//   s[t] = dot_f32_ref(q, k_t, head_dim) * scale
//   m = max over t of s[t];  e[t] = exp_ref(s[t] - m);  z = sum_f32_ref(e, n_kv)
//   o[d] = fma(e[t], v_t[d], o[d]) for t = 0, 1, ..., n_kv-1 from +0.0;  out[d] = o[d] / z
// k_t = k.row(t), v_t = v.row(t): the block layout never changes the bits. scratch holds n_kv
// floats.
void attention_head_ref(const float* q, const KvRows& k, const KvRows& v, size_t n_kv,
                        size_t head_dim, float scale, float* scratch, float* out);

// SwiGLU: out[i] = silu_ref(gate[i]) * up[i]. out may alias gate or up.
void swiglu_ref(const float* gate, const float* up, size_t n, float* out);

}  // namespace tzero
