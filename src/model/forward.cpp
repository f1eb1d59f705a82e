#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "base/error.h"

namespace tzero {

Forward::Forward(const Model& model, ThreadPool& pool, int n_ctx, int n_batch,
                 const KernelSet& kernels, bool fast)
    : model_(model),
      hp_(model.hparams()),
      pool_(pool),
      kern_(kernels),
      fast_(fast),
      n_batch_(n_batch),
      rope_(hp_.n_rot, n_ctx, hp_.rope_base) {
  const size_t B = size_t(n_batch);
  x_.resize(B * hp_.n_embd);
  xb_.resize(B * hp_.n_embd);
  q_.resize(B * hp_.q_dim());
  k_.resize(B * hp_.kv_dim());
  v_.resize(B * hp_.kv_dim());
  att_.resize(B * hp_.q_dim());
  proj_.resize(B * hp_.n_embd);
  gate_.resize(B * hp_.n_ff);
  up_.resize(B * hp_.n_ff);
  out_.resize(B * hp_.n_embd);
}

Forward::~Forward() = default;

void Forward::offload(int gpu_layers) {
  dev_.reset();
  if (gpu_layers > 0) dev_ = make_cuda_layers(model_, rope_, gpu_layers, n_batch_, rope_.n_pos());
}

namespace {
void add_bias(float* y, const float* bias, size_t n_tokens, size_t len) {
  if (!bias) return;
  for (size_t t = 0; t < n_tokens; ++t)
    for (size_t i = 0; i < len; ++i) y[t * len + i] += bias[i];
}
}  // namespace

void Forward::trace(std::string_view name, int layer, float* data, size_t n, size_t len, int pos) {
  if (perturb_.on && layer == perturb_.layer && name == perturb_.op && perturb_.pos >= pos &&
      perturb_.pos < pos + int(n)) {
    float* x = data + size_t(perturb_.pos - pos) * len;
    uint32_t bits;
    std::memcpy(&bits, x, 4);
    bits ^= 1u;
    std::memcpy(x, &bits, 4);
  }
  if (trace_) trace_(name, layer, data, n, len, pos);
}

void Forward::mm(const Matrix& w, const float* x, size_t n, float* y) {
  // Fast mode schedules matmul rows dynamically but keeps whole rows: splitting a reduction
  // across threads costs memory locality on a CPU (measured: half the decode speed). Its
  // nondeterminism comes from the split attention (model/attention_fast.cpp).
  if (fast_)
    matmul_fast(pool_, kern_, w, x, n, y, mm_, 1);
  else
    matmul(pool_, kern_, w, x, n, y, mm_);
}

void Forward::gather_kv_rows(const ForwardBatch& b, int il, const KvStore& kv) {
  const size_t n_seqs = b.tables.size(), n_kvh = size_t(hp_.n_head_kv);
  const size_t hd = size_t(hp_.head_dim), kv_dim = size_t(hp_.kv_dim());
  seq_len_.assign(n_seqs, 0);
  for (size_t i = 0; i < b.tokens.size(); ++i)
    seq_len_[size_t(b.seq[i])] = std::max(seq_len_[size_t(b.seq[i])], b.pos[i] + 1);
  seq_rows_.resize(n_seqs * n_kvh * 2);
  if (kv.type() == KvType::F16) {
    // Widen each sequence's rows once per layer into one contiguous block.
    if (wide_.size() < n_seqs) wide_.resize(n_seqs);
    row_ptrs_.resize(n_seqs * n_kvh * 2);
    pool_.run(n_seqs, [&](size_t s0, size_t s1) {
      for (size_t s = s0; s < s1; ++s) {
        const size_t n = size_t(seq_len_[s]);
        wide_[s].resize(2 * n * kv_dim);
        kv.read(b.tables[s], il, int(n), wide_[s].data(), wide_[s].data() + n * kv_dim);
      }
    });
    for (size_t s = 0; s < n_seqs; ++s)
      for (size_t h = 0; h < n_kvh; ++h) {
        const size_t i = (s * n_kvh + h) * 2;
        row_ptrs_[i] = wide_[s].data() + h * hd;
        row_ptrs_[i + 1] = wide_[s].data() + size_t(seq_len_[s]) * kv_dim + h * hd;
        seq_rows_[i] = single_block(&row_ptrs_[i], kv_dim);
        seq_rows_[i + 1] = single_block(&row_ptrs_[i + 1], kv_dim);
      }
    return;
  }
  const size_t bs = size_t(kv.block_size());
  size_t total = 0;
  for (size_t s = 0; s < n_seqs; ++s) total += (size_t(seq_len_[s]) + bs - 1) / bs;
  row_ptrs_.resize(total * n_kvh * 2);
  size_t off = 0;
  for (size_t s = 0; s < n_seqs; ++s) {
    const size_t nb = (size_t(seq_len_[s]) + bs - 1) / bs;
    for (size_t h = 0; h < n_kvh; ++h) {
      const float** kp = &row_ptrs_[off];
      const float** vp = &row_ptrs_[off + nb];
      for (size_t j = 0; j < nb; ++j) {
        kp[j] = kv.k_rows(b.tables[s][j], il) + h * hd;
        vp[j] = kv.v_rows(b.tables[s][j], il) + h * hd;
      }
      seq_rows_[(s * n_kvh + h) * 2] = KvRows{kp, bs, kv_dim};
      seq_rows_[(s * n_kvh + h) * 2 + 1] = KvRows{vp, bs, kv_dim};
      off += 2 * nb;
    }
  }
}

void Forward::attention(const ForwardBatch& b) {
  const int hd = hp_.head_dim, group = hp_.n_head / hp_.n_head_kv;
  const size_t q_dim = size_t(hp_.q_dim());
  const float scale = 1.0f / std::sqrt(float(hd));
  pool_.run(b.tokens.size() * size_t(hp_.n_head), [&](size_t i0, size_t i1) {
    thread_local std::vector<float> scores;
    for (size_t i = i0; i < i1; ++i) {
      const size_t t = i / size_t(hp_.n_head);
      const int h = int(i % size_t(hp_.n_head)), s = b.seq[t];
      const size_t n_kv = size_t(b.pos[t]) + 1;  // causal: positions 0 .. pos
      if (scores.size() < n_kv) scores.resize(n_kv);
      kern_.attention_head(&q_[t * q_dim + size_t(h) * hd], k_rows(s, h / group),
                           v_rows(s, h / group), n_kv, size_t(hd), scale, scores.data(),
                           &att_[t * q_dim + size_t(h) * hd]);
    }
  });
}

void Forward::eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits) {
  check(n >= 1 && n <= n_batch_, "internal: eval batch size out of range");
  check(pos >= 0 && pos + n <= kv.n_ctx(), "context full: position " + std::to_string(pos + n) +
                                               " exceeds the context of " +
                                               std::to_string(kv.n_ctx()) + " tokens");
  single_.clear();
  single_.tables.push_back(kv.table());
  for (int t = 0; t < n; ++t) single_.add(tokens[t], pos + t, 0, logits && t == n - 1);
  eval_batch(single_, kv.store(), logits);
}

void Forward::eval_batch(const ForwardBatch& b, KvStore& kv, float* logits) {
  const size_t N = b.tokens.size();
  check(N >= 1 && N <= size_t(n_batch_), "internal: eval batch size out of range");
  const size_t E = size_t(hp_.n_embd), Q = size_t(hp_.q_dim()), KV = size_t(hp_.kv_dim()),
               F = size_t(hp_.n_ff);
  const int hd = hp_.head_dim, bs = kv.block_size();
  // Traces name positions from the first token's: only one sequence's batch can be traced.
  const bool traced = b.tables.size() == 1;
  const int pos = b.pos[0];
  auto trace_batch = [&](std::string_view name, int layer, float* data, size_t len) {
    if (traced) trace(name, layer, data, N, len, pos);
  };

  const bool dev_embeds = dev_ && dev_->embeds();
  for (size_t t = 0; t < N; ++t) {
    check(b.tokens[t] >= 0 && b.tokens[t] < hp_.n_vocab,
          "token id " + std::to_string(b.tokens[t]) + " is outside the vocabulary");
    check(b.pos[t] >= 0 && b.pos[t] < rope_.n_pos(),
          "context full: position " + std::to_string(b.pos[t] + 1) + " exceeds the context of " +
              std::to_string(rope_.n_pos()) + " tokens");
    if (!dev_embeds) matrix_row_to_float(model_.tok_embd(), size_t(b.tokens[t]), &x_[t * E]);
  }
  if (!dev_embeds) trace_batch("inp_embd", -1, x_.data(), E);

  const int n_cpu_layers = dev_ ? dev_->first_layer() : hp_.n_layer;
  for (int il = 0; il < n_cpu_layers; ++il) {
    const LayerWeights& L = model_.layers()[il];
    // Attention block.
    for (size_t t = 0; t < N; ++t)
      kern_.rmsnorm(&x_[t * E], L.attn_norm, hp_.rms_eps, E, &xb_[t * E]);
    trace_batch("attn_norm", il, xb_.data(), E);
    mm(L.wq, xb_.data(), N, q_.data());
    mm(L.wk, xb_.data(), N, k_.data());
    mm(L.wv, xb_.data(), N, v_.data());
    add_bias(q_.data(), L.bq, N, Q);
    add_bias(k_.data(), L.bk, N, KV);
    add_bias(v_.data(), L.bv, N, KV);
    if (L.q_norm) {
      for (size_t r = 0; r < N * hp_.n_head; ++r)
        kern_.rmsnorm(&q_[r * hd], L.q_norm, hp_.rms_eps, size_t(hd), &q_[r * hd]);
      for (size_t r = 0; r < N * hp_.n_head_kv; ++r)
        kern_.rmsnorm(&k_[r * hd], L.k_norm, hp_.rms_eps, size_t(hd), &k_[r * hd]);
    }
    for (size_t t = 0; t < N; ++t) {
      const int p = b.pos[t];
      for (int h = 0; h < hp_.n_head; ++h)
        rope_ref(&q_[t * Q + size_t(h) * hd], p, rope_, hp_.rope_neox);
      for (int h = 0; h < hp_.n_head_kv; ++h)
        rope_ref(&k_[t * KV + size_t(h) * hd], p, rope_, hp_.rope_neox);
      kv.write(il, b.tables[size_t(b.seq[t])][p / bs], p % bs, &k_[t * KV], &v_[t * KV]);
    }
    trace_batch("Qcur", il, q_.data(), Q);
    trace_batch("Kcur", il, k_.data(), KV);
    trace_batch("Vcur", il, v_.data(), KV);
    gather_kv_rows(b, il, kv);
    if (fast_)
      attention_fast(b);
    else
      attention(b);
    trace_batch("kqv_out", il, att_.data(), Q);
    mm(L.wo, att_.data(), N, proj_.data());
    trace_batch("attn_out", il, proj_.data(), E);
    for (size_t i = 0; i < N * E; ++i) x_[i] += proj_[i];
    trace_batch("ffn_inp", il, x_.data(), E);

    // Feed-forward block (SwiGLU).
    for (size_t t = 0; t < N; ++t)
      kern_.rmsnorm(&x_[t * E], L.ffn_norm, hp_.rms_eps, E, &xb_[t * E]);
    trace_batch("ffn_norm", il, xb_.data(), E);
    mm(L.w_gate, xb_.data(), N, gate_.data());
    mm(L.w_up, xb_.data(), N, up_.data());
    trace_batch("ffn_gate", il, gate_.data(), F);
    trace_batch("ffn_up", il, up_.data(), F);
    kern_.swiglu(gate_.data(), up_.data(), N * F, gate_.data());
    trace_batch("ffn_swiglu", il, gate_.data(), F);
    mm(L.w_down, gate_.data(), N, proj_.data());
    trace_batch("ffn_out", il, proj_.data(), E);
    for (size_t i = 0; i < N * E; ++i) x_[i] += proj_[i];
    trace_batch("l_out", il, x_.data(), E);
  }

  const size_t n_out = b.logits_rows.size();
  if (dev_) {
    // The device runs the remaining layers and the head, tracing under the same names
    // (result_* rows carry the position of the row whose logits they are).
    DeviceTraceFn hook;
    if (traced && (trace_ || perturb_.on))
      hook = [&](std::string_view name, int layer, float* data, size_t n, size_t len) {
        const bool result = name.substr(0, 7) == "result_";
        trace(name, layer, data, n, len, result ? b.pos[size_t(b.logits_rows[0])] : pos);
      };
    dev_->eval(b, x_.data(), kv, logits, hook);
    return;
  }
  if (!logits || n_out == 0) return;
  for (size_t r = 0; r < n_out; ++r)
    kern_.rmsnorm(&x_[size_t(b.logits_rows[r]) * E], model_.output_norm(), hp_.rms_eps, E,
                  &out_[r * E]);
  const int out_pos = b.pos[size_t(b.logits_rows[0])];
  if (traced && n_out == 1) trace("result_norm", -1, out_.data(), 1, E, out_pos);
  mm(model_.output(), out_.data(), n_out, logits);
  if (traced && n_out == 1) trace("result_output", -1, logits, 1, size_t(hp_.n_vocab), out_pos);
}

}  // namespace tzero
