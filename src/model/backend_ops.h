// The operations an architecture is written in, and that a backend (backend/cpu, backend/cuda)
// implements. An architecture (model/arch/) says WHAT a layer computes and in which order; a
// backend says HOW one op runs on its device, and never the order of a layer.
//
// Contract: every op computes each output element in the canonical order of its scalar
// reference (docs/DETERMINISM.md: dot-v1, ops-v1, attn-v2, silu-v1, gelu-v1), whatever else shares
// the batch, so a backend that implements the ops gives the CPU reference's bits ("portable"). A
// backend with other orders must say so in its fingerprint (none exists yet).
//
// Buffers: an op reads and writes activations named by Act handles: (rows, len) float rows that
// live on the backend (host memory for the CPU, device memory for CUDA). The architecture
// declares them once (ActLayout); each backend allocates them for its batch size. Weights are
// passed as the model's host views (Matrix, const float*): a device backend keeps a device copy
// of each, uploaded once, found by the host address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/matrix.h"
#include "model/forward_batch.h"
#include "model/hparams.h"
#include "model/kv_cache.h"

namespace tzero {

// One activation buffer: rows of `len` floats (row-major, row stride len).
struct Act {
  int id = -1;
  size_t len = 0;
};

// The activation buffers of an architecture, in declaration order.
class ActLayout {
 public:
  Act add(size_t len) {
    lens_.push_back(len);
    return Act{int(lens_.size()) - 1, len};
  }
  const std::vector<size_t>& lens() const { return lens_; }

 private:
  std::vector<size_t> lens_;
};

enum class RopeLayout {
  Interleaved,  // pairs (2i, 2i+1): llama, mistral
  Neox,         // pairs (i, i + n_rot/2): qwen2, qwen3, gemma3
};

// Which rotary frequencies: the model's (rope.freq_base, rope.scaling), or those of the
// sliding-window layers (hparams.rope_base_swa, unscaled: gemma3's local layers).
enum class RopeFreqs { Model, SlidingWindow };

// Attention of one layer over the paged KV cache. Query head h reads kv head h / (n_head /
// n_head_kv). window = 0: every position 0..pos (full causal); window > 0: the last `window`
// positions, pos + 1 - window .. pos (sliding-window attention, attn-v2's SLIDING WINDOW; the
// CUDA backend refuses it).
struct AttentionSpec {
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 0;  // applied to q.k (usually 1/sqrt(head_dim))
  int window = 0;
  float softcap = 0;  // > 0: scores soft-capped before the softmax (Gemma 2; attn_softcap_ref)
  const float* sinks = nullptr;  // (n_head) each query head's sink logit (gpt-oss), or null
  // > 0: values and output heads are v_dim wide and the values are the first v_dim floats of
  // the cached key rows (MLA: the cache holds keys only); q and k stay head_dim wide.
  int v_dim = 0;
};

// A mixture-of-experts layer's routing (moe-v1): softmax over n_expert router logits, the
// n_used largest (ties to the lower id), their weights renormalised to sum 1 when norm_weights;
// or (gating SoftmaxWeight, gpt-oss) the n_used largest logits, their weights a softmax over them.
// Sigmoid gating (DeepSeek-V3, GLM-4.5) adds: the selection bias (the layer's exp_probs_b, or
// null), the groups, and the weights' scale (kernels/moe.h, SIGMOID).
struct MoeSpec {
  int n_expert = 0, n_used = 0;
  bool norm_weights = true;
  MoeGating gating = MoeGating::Softmax;
  const float* selection_bias = nullptr;  // (n_expert)
  int n_groups = 1, n_groups_used = 1;
  float scale = 1.0f;
};

// The linear attention of a Gated DeltaNet layer (kernels/delta_net.h, delta-v1): its input row
// is the short convolution's output [q (n_k_heads x d_k) | k (the same) | v (n_v_heads x d_v)],
// q and k already L2-normed; value head h reads key head h / (n_v_heads / n_k_heads), or
// h % n_k_heads when tiled. Each output head is scaled by `scale` (1/sqrt(d_k)).
struct DeltaNetSpec {
  int n_k_heads = 0, n_v_heads = 0, d_k = 0, d_v = 0;
  bool tiled = false;
  float scale = 1;
};

// Mamba-2's selective scan (kernels/ssm_scan.h, mamba2-v1): its input row is the convolution's
// output [x (n_heads x head_dim) | B (n_groups x d_state) | C (the same)].
struct SsmSpec {
  int n_heads = 0, head_dim = 0, n_groups = 0, d_state = 0;
};

// The gated feed-forward activation: out = act(gate) * up.
enum class Activation {
  SiLU,       // SwiGLU (silu-v1): llama, qwen
  GeluTanh,   // GeGLU with the tanh approximation (gelu-v1): gemma3
  SwigluOai,  // gpt-oss's clamped SwiGLU (swiglu_oai_ref, swiglu-oai-v1): the gate clamped
              // above at 7, the up to [-7, 7], out = gate * sigmoid(1.702 gate) * (up + 1)
};

class BackendOps {
 public:
  virtual ~BackendOps() = default;
  virtual std::string describe() const = 0;  // for --json and logs

  // Starts a forward pass over `batch` (at most the n_batch the backend was made for). `kv` is
  // the host store the pass writes: a host backend uses it, a device backend mirrors its
  // geometry (block table, block size, type) for the layers it runs.
  virtual void begin(const ForwardBatch& batch, KvStore& kv) = 0;
  // Ends the pass (waits for queued device work).
  virtual void finish() {}

  // Moving rows between the host and the backend's buffers.
  virtual void upload(Act dst, const float* host, size_t rows) = 0;
  virtual void download(Act src, size_t rows, float* host) = 0;
  // The buffer's rows in host memory when the backend keeps them there (no copy), else null.
  virtual float* host_rows(Act a) { return nullptr; }

  // ---- the ops. `rows` is how many rows of the buffers take part (the batch's tokens, or
  // its logits rows); ops without it act on every token of the batch.
  // out row t = the table row of token t (dequantized).
  virtual void embed(const Matrix& table, Act out) = 0;
  // out row = rmsnorm(x row) * w (ops-v1); out may be x.
  virtual void rmsnorm(Act x, const float* w, float eps, Act out, size_t rows) = 0;
  // The same on every head_dim slice of each row, in place (per-head Q/K norm).
  virtual void rmsnorm_heads(Act x, const float* w, float eps, size_t head_dim, size_t rows) = 0;
  // y row t = W x row t (dot-v1 of W's type); y.len = W rows, x.len = W columns.
  virtual void matmul(const Matrix& w, Act x, Act y, size_t rows) = 0;
  // y row += b.
  virtual void add_bias(Act y, const float* b, size_t rows) = 0;
  // RoPE (ops-v1) of every head of each token's row at the token's position.
  virtual void rope(Act x, int n_heads, int head_dim, RopeLayout layout, RopeFreqs freqs) = 0;
  // Stores each token's key and value rows in the KV cache of `layer` at its position.
  virtual void kv_write(int layer, Act k, Act v) = 0;
  // out row t = attention (attn-v2) of token t's query heads over its sequence's cached keys
  // and values of `layer`.
  virtual void attention(int layer, Act q, Act out, const AttentionSpec& spec) = 0;
  // Column ranges between buffers, exact copies: for each row t < rows and group g < groups,
  // dst row t [g * dst_stride + dst_off, + width) = src row t [g * src_stride + src_off, + width)
  // (MLA's split of heads into their no-rope and rope parts, and their joins).
  virtual void copy_cols(Act src, size_t src_stride, size_t src_off, Act dst, size_t dst_stride,
                         size_t dst_off, size_t width, size_t groups, size_t rows) = 0;
  // x += y, element by element.
  virtual void add(Act x, Act y, size_t rows) = 0;
  // x *= s, element by element (gemma's embedding scale).
  virtual void scale(Act x, float s, size_t rows) = 0;
  // x = softcap_ref(x, cap), element by element (Gemma 2's final logits; softcap-v1).
  virtual void softcap(Act x, float cap, size_t rows) = 0;
  // out = act(gate) * up, element by element; out may be gate.
  virtual void glu(Activation act, Act gate, Act up, Act out, size_t rows) = 0;
  // ---- mixture of experts (kernels/moe.h, moe-v1). A token's k = spec.n_used slots are its
  // chosen experts in rank order; slot buffers hold a token's k slots in one row (k * len).
  // probs row = softmax of the router logits row; ids row = the k expert ids as floats (exact
  // integers); weights row = their weights.
  virtual void moe_route(Act logits, const MoeSpec& spec, Act probs, Act ids, Act weights,
                         size_t rows) = 0;
  // y slot (t, j) = W[ids (t, j)] times x row t (x_per_slot false) or x slot (t, j) (true);
  // y.len = k * W rows. Tokens are grouped by expert: each chosen expert is read once. A slot
  // whose id is negative is left out, its y slot untouched (its expert runs on another rank:
  // RemoteExperts, model/arch/moe_ffn.h); so is it in add_expert_bias.
  virtual void matmul_experts(const ExpertMatrix& w, Act x, bool x_per_slot, Act ids, Act y,
                              size_t rows) = 0;
  // y slot (t, j) += b row ids (t, j) (b: (n_expert, y.len / k), gpt-oss's expert biases).
  virtual void add_expert_bias(Act y, const float* b, Act ids, size_t rows) = 0;
  // out row t = sum over j of weights (t, j) * y slot (t, j), in rank order (moe-v1).
  virtual void moe_combine(Act y, Act weights, Act out, size_t rows) = 0;
  // x row t *= sigmoid(g row t [0]) (qwen2moe's shared-expert gate; g.len = 1).
  virtual void scale_by_sigmoid(Act x, Act g, size_t rows) = 0;
  // x *= sigmoid_ref(g), element by element (the gated attention's output gate; g.len = x.len).
  virtual void mul_sigmoid(Act x, Act g, size_t rows) = 0;
  // ---- Gated DeltaNet (kernels/delta_net.h, delta-v1). `layer` is the model layer; its state
  // is each token's sequence's (ForwardBatch::state_slots, KvStore's recurrent state). A
  // sequence's first token in the batch at position 0 starts from a zero state; at any other
  // position the state must have reached it (else tzero::Error: the state cannot rewind).
  // out row t = silu(short convolution) of x row t and the sequence's previous K - 1 inputs;
  // w: (x.len, K) each channel's taps. The state keeps the last K - 1 inputs.
  // bias (x.len) or null: added to the sum before the silu (Mamba-2's conv1d bias).
  virtual void short_conv(int layer, Act x, const float* w, int K, Act out,
                          const float* bias = nullptr) = 0;
  // Each head_dim slice of the first `width` floats of every row scaled to unit L2 norm, in
  // place (l2norm_ref).
  virtual void l2norm_heads(Act x, size_t width, size_t head_dim, float eps, size_t rows) = 0;
  // a (n_v_heads) -> the log decay softplus(a + dt_bias) * A, b -> beta = sigmoid(b), in place.
  virtual void delta_gates(Act a, Act b, const float* dt_bias, const float* A, size_t rows) = 0;
  // out row t = the delta rule's output (n_v_heads x d_v) for token t over qkv row t, with its
  // log decay g row t and beta row t; the state advances to the token's position + 1.
  virtual void delta_net(int layer, Act qkv, Act g, Act beta, Act out,
                         const DeltaNetSpec& spec) = 0;
  // ---- Mamba-2 (nemotron_h). y row t = the selective scan's output for token t over xbc row t
  // (the convolution's output) and dt row t (n_heads raw steps), with its D skip; the state
  // (KvStore::delta_state) advances to the token's position + 1, as delta_net's.
  virtual void ssm_scan(int layer, Act xbc, Act dt, const float* dt_bias, const float* A,
                        const float* D, Act y, const SsmSpec& spec) = 0;
  // Each `group` floats of every row RMS-normed (ops-v1) and times its part of w (x.len
  // floats), in place: Mamba-2's grouped gated norm.
  virtual void rmsnorm_groups(Act x, const float* w, float eps, size_t group, size_t rows) = 0;
  // x = relu(x)^2, element by element: r = x > 0 ? x : 0, then r * r (nemotron_h's MLP).
  virtual void relu_sqr(Act x, size_t rows) = 0;
  // out row r = x row batch.logits_rows[r].
  virtual void gather_logits_rows(Act x, Act out) = 0;
};

}  // namespace tzero
