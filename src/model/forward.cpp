#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"

namespace tz {

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

void Forward::attention(int il, int n, int pos, KvCache& kv) {
  const int hd = hp_.head_dim, group = hp_.n_head / hp_.n_head_kv;
  const size_t kv_dim = size_t(hp_.kv_dim()), q_dim = size_t(hp_.q_dim());
  const float scale = 1.0f / std::sqrt(float(hd));
  pool_.run(size_t(n) * hp_.n_head, [&](size_t i0, size_t i1) {
    thread_local std::vector<float> scores;
    for (size_t i = i0; i < i1; ++i) {
      const int t = int(i / hp_.n_head), h = int(i % hp_.n_head);
      const int n_kv = pos + t + 1;  // causal: positions 0 .. pos+t
      if (scores.size() < size_t(n_kv)) scores.resize(size_t(n_kv));
      const size_t kv_off = size_t(h / group) * hd;
      kern_.attention_head(&q_[t * q_dim + size_t(h) * hd], kv.k(il, 0) + kv_off,
                           kv.v(il, 0) + kv_off, size_t(n_kv), size_t(hd), kv_dim, scale,
                           scores.data(), &att_[t * q_dim + size_t(h) * hd]);
    }
  });
}

void Forward::eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits) {
  check(n >= 1 && n <= n_batch_, "internal: eval batch size out of range");
  check(pos >= 0 && pos + n <= kv.n_ctx() && pos + n <= rope_.n_pos(),
        "context full: position " + std::to_string(pos + n) + " exceeds the context of " +
            std::to_string(kv.n_ctx()) + " tokens");
  const size_t E = size_t(hp_.n_embd), Q = size_t(hp_.q_dim()), KV = size_t(hp_.kv_dim()),
               F = size_t(hp_.n_ff), N = size_t(n);
  const int hd = hp_.head_dim;

  for (int t = 0; t < n; ++t) {
    check(tokens[t] >= 0 && tokens[t] < hp_.n_vocab,
          "token id " + std::to_string(tokens[t]) + " is outside the vocabulary");
    matrix_row_to_float(model_.tok_embd(), size_t(tokens[t]), &x_[t * E]);
  }
  trace("inp_embd", -1, x_.data(), N, E, pos);

  for (int il = 0; il < hp_.n_layer; ++il) {
    const LayerWeights& L = model_.layers()[il];
    // Attention block.
    for (size_t t = 0; t < N; ++t)
      kern_.rmsnorm(&x_[t * E], L.attn_norm, hp_.rms_eps, E, &xb_[t * E]);
    trace("attn_norm", il, xb_.data(), N, E, pos);
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
      const int p = pos + int(t);
      for (int h = 0; h < hp_.n_head; ++h)
        rope_ref(&q_[t * Q + size_t(h) * hd], p, rope_, hp_.rope_neox);
      for (int h = 0; h < hp_.n_head_kv; ++h)
        rope_ref(&k_[t * KV + size_t(h) * hd], p, rope_, hp_.rope_neox);
      std::copy_n(&k_[t * KV], KV, kv.k(il, p));
      std::copy_n(&v_[t * KV], KV, kv.v(il, p));
    }
    trace("Qcur", il, q_.data(), N, Q, pos);
    trace("Kcur", il, k_.data(), N, KV, pos);
    trace("Vcur", il, v_.data(), N, KV, pos);
    if (fast_)
      attention_fast(il, n, pos, kv);
    else
      attention(il, n, pos, kv);
    trace("kqv_out", il, att_.data(), N, Q, pos);
    mm(L.wo, att_.data(), N, proj_.data());
    trace("attn_out", il, proj_.data(), N, E, pos);
    for (size_t i = 0; i < N * E; ++i) x_[i] += proj_[i];
    trace("ffn_inp", il, x_.data(), N, E, pos);

    // Feed-forward block (SwiGLU).
    for (size_t t = 0; t < N; ++t)
      kern_.rmsnorm(&x_[t * E], L.ffn_norm, hp_.rms_eps, E, &xb_[t * E]);
    trace("ffn_norm", il, xb_.data(), N, E, pos);
    mm(L.w_gate, xb_.data(), N, gate_.data());
    mm(L.w_up, xb_.data(), N, up_.data());
    trace("ffn_gate", il, gate_.data(), N, F, pos);
    trace("ffn_up", il, up_.data(), N, F, pos);
    kern_.swiglu(gate_.data(), up_.data(), N * F, gate_.data());
    trace("ffn_swiglu", il, gate_.data(), N, F, pos);
    mm(L.w_down, gate_.data(), N, proj_.data());
    trace("ffn_out", il, proj_.data(), N, E, pos);
    for (size_t i = 0; i < N * E; ++i) x_[i] += proj_[i];
    trace("l_out", il, x_.data(), N, E, pos);
  }

  if (!logits) return;
  const float* last = &x_[(N - 1) * E];
  kern_.rmsnorm(last, model_.output_norm(), hp_.rms_eps, E, xb_.data());
  trace("result_norm", -1, xb_.data(), 1, E, pos + n - 1);
  mm(model_.output(), xb_.data(), 1, logits);
  trace("result_output", -1, logits, 1, size_t(hp_.n_vocab), pos + n - 1);
}

}  // namespace tz
