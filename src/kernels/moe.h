// Mixture-of-experts routing and the expert combine, in their canonical orders (version
// "moe-v1", docs/DETERMINISM.md). Both are row-local: a token's experts, weights and output
// depend on its own row only, never on what else shares the batch.
//
// Routing of one token (moe_route_ref), softmax gating as qwen3moe, qwen2moe and Mixtral use:
//   probs_i = e_i / z with m = max_i logits_i, e_i = exp_ref(logits_i - m), z = sum_f32_ref(e)
//   ids     = the k experts of the largest probs, largest first; equal probs: lower id first
//   w_j     = probs[ids_j]; with `norm`: s = w_0 + w_1 + ... (rank order), clamped below at
//             6.103515625e-5 as llama.cpp clamps it, then w_j = w_j / s
// SOFTMAX_WEIGHT gating (gpt-oss; moe_route_softmax_weight_ref):
//   ids     = the k largest logits, largest first; equal logits: lower id first
//   w_j     = e_j / z, m = logits[ids_0], e_j = exp_ref(logits[ids_j] - m), z = sum_f32_ref(e)
//   (a softmax over the k chosen logits, in rank order); probs = the logits, unchanged
// SIGMOID gating (DeepSeek-V3, GLM-4.5; moe_route_sigmoid_ref), as llama.cpp's build_moe_ffn:
//   probs_i = sigmoid_ref(logits_i);  sel_i = probs_i + bias_i (the exp_probs_b tensor; none:
//   probs) with G > 1 groups of P = E / G contiguous experts: score_g = a + b, a >= b the two
//   largest
//     sel of group g (P = 1: its one sel); the G_used largest scores' groups (equal: lower group
//     first) stay, every other expert's sel becomes -inf
//   ids = the k largest sel, largest first; equal: lower id first
//   w_j = probs[ids_j] (the unbiased score); with `norm`: s = w_0 + w_1 + ... (rank order),
//   clamped below at 6.103515625e-5, w_j = w_j / s; then w_j = w_j * scale when scale != 1
// Combine of one token (moe_combine_ref):
//   out_i = w_0 * y_0,i + w_1 * y_1,i + ... + w_{k-1} * y_{k-1},i
// left to right in rank order, each product rounded (no fused multiply-add): the order of
// llama.cpp's graph (ggml_mul of the weights, then ggml_add of the expert views in rank order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/thread_pool.h"

namespace tzero {

// logits: (n_expert); probs: (n_expert) out; ids, weights: (k) out. 1 <= k <= n_expert.
void moe_route_ref(const float* logits, size_t n_expert, size_t k, bool norm, float* probs,
                   int32_t* ids, float* weights);

// The same with SOFTMAX_WEIGHT gating; probs receives a copy of the logits.
void moe_route_softmax_weight_ref(const float* logits, size_t n_expert, size_t k, float* probs,
                                  int32_t* ids, float* weights);

// The same with SIGMOID gating. bias: (n_expert) or null; sel: (n_expert) scratch.
// softmax_scores: probs are moe_route_ref's softmax instead of sigmoids (DeepSeek-V2's
// GroupedSoftmax), the rest unchanged.
void moe_route_sigmoid_ref(const float* logits, const float* bias, size_t n_expert, size_t k,
                           size_t n_groups, size_t n_groups_used, bool norm, float scale,
                           float* probs, int32_t* ids, float* weights, float* sel,
                           bool softmax_scores = false);

// y: (k, n) the token's expert outputs in rank order; w: (k); out: (n).
void moe_combine_ref(const float* y, const float* w, size_t k, size_t n, float* out);

// What a throughput-first engine does (`--mode fast`): the (token, rank) outputs of n_tok tokens
// are claimed by the pool's threads in whatever order they get to them and added into
// out (n_tok, n), zeroed first, with atomic float adds: the sum's order is the arrival order,
// so its bits change from run to run. y: (n_tok, k, n); w: (n_tok, k).
void moe_combine_arrival(ThreadPool& pool, const float* y, const float* w, size_t n_tok, size_t k,
                         size_t n, float* out);

// sigmoid(x) = 1 / (1 + e^-x) with exp_ref (qwen2moe's shared-expert gate).
float sigmoid_ref(float x);

}  // namespace tzero
