// attn-v2 (kernels/attention.h) over a whole position range with a kernel set's pieces: the
// scores of every position, their max, then the position blocks in order, merged left to
// right. For callers that give one thread a whole (token, kv head); a backend that splits the
// blocks over threads calls the pieces itself (backend/cpu/cpu_attention.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/attention.h"
#include "kernels/kernel_set.h"

namespace tzero {

// Reusable buffers, grown on demand.
struct AttnScratch {
  std::vector<float> s;    // (n_q, ld) scores, then e, ld = n_kv rounded up to 16
  std::vector<float> o_j;  // (n_q, head_dim) one block's o
  std::vector<float> z_j;  // (n_q) one block's z
  std::vector<float> z;    // (n_q) running z
  std::vector<float> m;    // (n_q) max score
};

// out[g * out_stride + d] = attn-v2 of query head g (q + g * q_stride) over positions
// [0, n_kv) of k and v: attention_head_ref's bits for every head (with the same softcap, and
// sinks[g] as head g's sink logit when sinks is not null).
void attention_heads(const KernelSet& k, const float* q, size_t q_stride, size_t n_q,
                     const KvRows& kr, const KvRows& vr, size_t n_kv, size_t head_dim, float scale,
                     AttnScratch& scratch, float* out, size_t out_stride, float softcap = 0.0f,
                     const float* sinks = nullptr, size_t v_dim = 0);
// v_dim > 0: the values are the first v_dim floats of each value row (MLA reads them from the
// key rows), and out has v_dim per head; 0: head_dim.

// The sink's two steps (kernels/attention.h, SINK): m[g] = fmax(m[g], sinks[g]) after the
// scores, and z[g] = z[g] + exp_ref(sinks[g] - m[g]) after the last merge.
void attn_sink_max(size_t n_q, const float* sinks, float* m);
void attn_sink_sum(size_t n_q, const float* sinks, const float* m, float* z);

// The merge of attn-v2 for n_q heads: block j's (z_j, o_j) into the running (z, o); the first
// block (j == 0) is copied. Then attn_finish divides: o[g][d] /= z[g].
void attn_merge(size_t n_q, size_t head_dim, bool first, const float* z_j, const float* o_j,
                size_t oj_stride, float* z, float* o, size_t o_stride);
void attn_finish(size_t n_q, size_t head_dim, const float* z, float* o, size_t o_stride);

}  // namespace tzero
