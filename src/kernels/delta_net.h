// Gated DeltaNet (the linear attention of Qwen3-Next and Qwen3.5): the short causal convolution
// with its rolling state, the gates, the L2 norm and the delta-rule recurrence, as scalar
// references with their canonical orders.
//
// CANONICAL ORDERS (version "delta-v1"; every variant must return these bits exactly)
//
// The recurrent form only: the state after token t is computed from the state after t - 1 and
// token t, in this order, however the tokens were batched or chunked, so prefill equals
// token-by-token decode bit for bit. Its parallelism is over sequences, value heads and rows of
// the state (each row's recurrence is independent of the others), never over tokens.
//
//   Short convolution (channel c, kernel width K, x_t the token's input row):
//     acc = +0; acc = acc + w[c][j] * x_{t-K+1+j}[c] for j = 0 .. K-1 (each product rounded, no
//     FMA); out = silu_ref(acc). Inputs before the sequence's first token are +0. The state
//     keeps the last K-1 inputs, oldest first.
//   Gates (value head h): beta = sigmoid_ref(b_h) = 1 / (1 + exp_ref(-b_h));
//     g = softplus_ref(a_h + dt_bias_h) * A_h (A = the file's ssm_a, -exp(A_log));
//     decay = exp_ref(g).
//   L2 norm (each key head of q and k): ss = 16-lane dot-v1 of x with itself;
//     x = x * (1 / fmaxf(sqrtf(ss), eps)), eps the model's RMS epsilon (llama.cpp's l2_norm).
//   Delta rule (value head h over its key head; S: head_v_dim rows of head_k_dim floats), for
//   each row j independently:
//     S_j = S_j * decay                 (element by element)
//     kv = dot-v1(S_j, k)               (16 lanes, dot_f32_ref)
//     delta = (v_j - kv) * beta
//     S_j = S_j + k * delta             (element by element: product rounded, then the sum)
//     out_j = dot-v1(S_j, q) * scale   (scale = 1/sqrt(head_k_dim): llama.cpp's fused op
//                                        scales the output, not q)
// The dot products go through the kernel set's dot_f32, whose bits every set shares (dot-v1);
// the element-by-element steps are single IEEE operations, the same bits on any ISA.
#pragma once

#include <cstddef>

namespace tzero {

using DotF32Fn = float (*)(const float* a, const float* b, size_t n);

// One token of the short convolution over channels [c0, c1) of n_ch: x (n_ch) the token's
// input; state ((K - 1) * n_ch) the previous K - 1 inputs, oldest first (shifted by one row, x
// appended, in those channels); w (n_ch, K) row c channel c's taps, oldest first (llama.cpp's
// ssm_conv1d, ne {K, n_ch}); out[c] = silu(conv).
void short_conv_silu_cols(const float* x, size_t n_ch, size_t c0, size_t c1, const float* w,
                          size_t K, float* state, float* out);
// The same without the silu: out[c] = the convolution's sum (a backend applies silu-v1 after,
// e.g. as the kernel set's swiglu with an up of ones: silu_ref(acc) * 1 is silu_ref(acc)).
// bias (n_ch) or null: added to the sum (Mamba-2's conv1d bias: acc + bias, then the silu).
void short_conv_cols(const float* x, size_t n_ch, size_t c0, size_t c1, const float* w, size_t K,
                     float* state, float* out, const float* bias = nullptr);
// Every channel.
void short_conv_silu_ref(const float* x, size_t n_ch, const float* w, size_t K, float* state,
                         float* out);

// x (n) scaled to unit L2 norm in place: x = x * r, r = 1 / fmaxf(sqrtf(ss), eps).
void l2norm_ref(float* x, size_t n, float eps, DotF32Fn dot);

// The gates of one token's value heads, in place: a (n_heads) -> g = softplus(a + dt_bias) *
// A, then b (n_heads) -> beta = sigmoid(b).
void delta_gates_ref(float* a, float* b, const float* dt_bias, const float* A, size_t n_heads);

// Rows [j0, j1) of one value head's delta rule for one token: S (head_v_dim, d_k) the state,
// updated; q, k (d_k) the key head's normed query and key; v (head_v_dim) the token's values;
// g the log decay, beta the update gate; out[j] for j in [j0, j1).
void delta_rule_rows(float* S, size_t d_k, size_t j0, size_t j1, const float* q, const float* k,
                     const float* v, float g, float beta, float scale, float* out, DotF32Fn dot);

// The scalar reference: every row, with dot_f32_ref.
void delta_rule_ref(float* S, size_t d_k, size_t d_v, const float* q, const float* k,
                    const float* v, float g, float beta, float scale, float* out);

// FAST MODE ONLY (--mode fast; no canonical order): the chunked form other engines use for
// prefill (llama.cpp's fallback, FLA's chunk kernels), over the n tokens of one chunk of one
// value head: G = the within-chunk cumulative sum of g; A[t][u] = beta_t exp(G_t - G_u) k_t.k_u
// (u < t); U = (I + A)^-1 (beta V), W = (I + A)^-1 (beta exp(G) K) by forward substitution;
// per state row j: delta = U[:, j] - W S_j, out_t[j] = (exp(G_t) q_t.S_j + sum over u <= t of
// exp(G_t - G_u) q_t.k_u delta_u) * scale, S_j = exp(G_last) S_j + sum_u exp(G_last - G_u)
// delta_u k_u. The same math as the recurrence, summed in other groupings, so its bits depend
// on where the chunks fall: on the batch. q, k: n rows of d_k at stride qk_stride; v: n rows
// of d_v at v_stride; g, beta: n values at gb_stride; out: n rows at out_stride.
void delta_chunk_fast(float* S, size_t d_k, size_t d_v, size_t n, const float* q, const float* k,
                      size_t qk_stride, const float* v, size_t v_stride, const float* g,
                      const float* beta, size_t gb_stride, float scale, float* out,
                      size_t out_stride, DotF32Fn dot);

}  // namespace tzero
