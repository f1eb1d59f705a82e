// Attention over cached key and value rows: the canonical order ("attn-v2") and its scalar
// reference, in pieces a backend can schedule over threads without changing a bit.
//
// CANONICAL ORDER (version "attn-v2"), one query head q over n_kv cached positions, B =
// kAttnBlock:
//   s[t] = dot_f32_ref(q, k_t, head_dim) * scale                 for t < n_kv
//   m = max over t of s[t];  e[t] = exp_ref(s[t] - m)
//   position block j covers t in [j*B, min(n_kv, (j+1)*B)):
//     z_j = sum_f32_ref(e + j*B, its length)                    (16 lanes from the block start)
//     o_j[d] = fma(e[t], v_t[d], o_j[d]) for t ascending in the block, from +0.0
//   z = ((z_0 + z_1) + z_2) + ...;  o[d] = ((o_0[d] + o_1[d]) + o_2[d]) + ...
//   out[d] = o[d] / z
// The blocks are a split by size, never by thread count: block j's partial sums may be
// computed by any thread, at any time, and the merge is always left to right. With n_kv <= B
// there is one block and this is exactly the previous version, attn-v1 (the whole range in one
// chain). The max is exact in any order. k_t = k.row(t), v_t = v.row(t): the paged layout
// never changes the bits.
//
// SLIDING WINDOW (window W > 0, gemma3's local layers): the query at position p attends to
// positions lo..p, lo = max(0, p + 1 - W) (llama.cpp's standard window: p - t < W). Its order is
// the one above over those positions numbered from 0 (k_t = cache row lo + t, blocks of B from
// lo): the same function of the same rows wherever the window starts in the cache.
//
// SINK (gpt-oss, "attn-v2 sink"): a learned logit per query head that takes part in the softmax
// and has no value. With sink logit k: m = fmax(max over t of s[t], k) (the max of the scores
// first, then the sink); the blocks and their merge are unchanged; then, after the last block's
// merge and before the division, z = z + exp_ref(k - m) (ggml's soft_max with sinks adds it to
// the sum the same way: once, at the end).
#pragma once

#include <cstddef>

namespace tzero {

// Positions per attention block (attn-v2): the unit of the split and of the merge.
constexpr size_t kAttnBlock = 256;

// Cached key or value rows of one head, stored in blocks of block_size positions (the paged KV
// cache; a contiguous cache is one block): row t starts at
// blocks[t / block_size] + (t % block_size) * stride.
struct KvRows {
  const float* const* blocks;
  size_t block_size;
  size_t stride;     // floats between consecutive rows of a block
  size_t first = 0;  // position t of the view is cache position first + t (from())
  const float* row(size_t t) const {
    t += first;
    return blocks[t / block_size] + (t % block_size) * stride;
  }
  // The rows from cache position `lo` on, as positions 0, 1, ... (a sliding window's view).
  KvRows from(size_t lo) const {
    KvRows r = *this;
    r.first += lo;
    return r;
  }
  // The run of consecutive rows that starts at position t and ends before t1 or at its block's
  // end: *rows = row(t), returns its length. Loops over runs without a callback (a lambda that
  // captures a kernel's accumulators makes the compiler spill them at every row).
  size_t run_at(size_t t, size_t t1, const float** rows) const {
    const size_t c = t + first, off = c % block_size;
    const size_t n = block_size - off < t1 - t ? block_size - off : t1 - t;
    *rows = blocks[c / block_size] + off * stride;
    return n;
  }
  // Calls f(first row, first position, row count) for the runs of consecutive rows covering
  // positions [t0, t1).
  template <typename F>
  void for_each_run(size_t t0, size_t t1, F&& f) const {
    while (t0 < t1) {
      const size_t c = t0 + first, b = c / block_size, off = c % block_size;
      const size_t n = block_size - off < t1 - t0 ? block_size - off : t1 - t0;
      f(blocks[b] + off * stride, t0, n);
      t0 += n;
    }
  }
  template <typename F>
  void for_each_run(size_t n, F&& f) const {
    for_each_run(0, n, static_cast<F&&>(f));
  }
};

// Every row in one block (a contiguous cache); *base must outlive the KvRows.
inline KvRows single_block(const float* const* base, size_t stride) {
  return KvRows{base, ~size_t(0), stride, 0};
}

// The pieces of attn-v2, for n_q query heads that share one key/value head (a GQA group, or
// one head): head g's query starts at q + g * q_stride.
//
// Scores over positions [t0, t1): s[g * ld + (t - t0)] = dot_f32_ref(q_g, k_t, head_dim) *
// scale, and m[g] = fmax(m[g], each of them) (the caller starts m at -inf).
void attn_scores_ref(const float* q, size_t q_stride, size_t n_q, const KvRows& k, size_t t0,
                     size_t t1, size_t head_dim, float scale, float* s, size_t ld, float* m);
// One position block [t0, t1) (t1 - t0 <= kAttnBlock, t0 a multiple of it): the scores
// s[g * ld + i] become e = exp_ref(s - m[g]) in place; z[g] = sum_f32_ref of them; and
// o[g * o_stride + d] = the block's fma chain over its positions from +0.0 (d < head_dim).
void attn_block_ref(float* s, size_t ld, size_t n_q, const float* m, const KvRows& v, size_t t0,
                    size_t t1, size_t head_dim, float* z, float* o, size_t o_stride);

// SOFT-CAPPED SCORES (Gemma 2): s[t] = softcap_ref(s[t], cap) (softcap-v1) for every score,
// before the max; m = the max of the capped scores. In place on n scores of each of n_q rows
// (stride ld); m[g] is recomputed from -inf.
void attn_softcap_ref(float* s, size_t ld, size_t n_q, size_t n, float cap, float* m);

// Whole attn-v2 for one query head with the reference pieces. scratch holds n_kv floats.
// softcap > 0: the scores are soft-capped (attn_softcap_ref) before the softmax; sink: the head's
// sink logit (SINK above), or null.
void attention_head_ref(const float* q, const KvRows& k, const KvRows& v, size_t n_kv,
                        size_t head_dim, float scale, float* scratch, float* out,
                        float softcap = 0.0f, const float* sink = nullptr);

}  // namespace tzero
