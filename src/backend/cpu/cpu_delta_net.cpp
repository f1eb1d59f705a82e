// The CPU backend's Gated DeltaNet ops (model/backend_ops.h, kernels/delta_net.h): each
// sequence's tokens in position order over its recurrent state, in parallel over sequences,
// channels (the convolution) and (value head, block of state rows) (the delta rule). Each
// element is computed by one thread in delta-v1's order, so neither the thread count nor the
// batch mates change a bit.
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "base/error.h"
#include "kernels/delta_net.h"
#include "kernels/math.h"
#include "kernels/moe.h"
#include "kernels/ssm_scan.h"

namespace tzero {

namespace {
constexpr size_t kConvChannelsPerTask = 256;
constexpr size_t kStateRowsPerTask = 16;
constexpr size_t kFastChunk = 64;  // llama.cpp's chunk for the scalar gate
}  // namespace

void CpuBackend::group_sequences() {
  const ForwardBatch& b = *batch_;
  seq_tokens_.assign(b.tables.size(), {});
  for (size_t t = 0; t < b.size(); ++t) seq_tokens_[size_t(b.seq[t])].push_back(int32_t(t));
  // save_at_[t]: the snapshot slot to copy the state into after token t, or -1.
  save_at_.assign(b.size(), -1);
  for (const ForwardBatch::StateSave& sv : b.state_saves)
    for (const int32_t t : seq_tokens_[size_t(sv.seq)])
      if (b.pos[size_t(t)] == sv.pos) save_at_[size_t(t)] = sv.slot;
}

void CpuBackend::advance_states(int layer) {
  for (size_t s = 0; s < seq_tokens_.size(); ++s)
    if (!seq_tokens_[s].empty())
      kv_->state_pos(batch_->state_slots[s], layer) =
          batch_->pos[size_t(seq_tokens_[s].back())] + 1;
  for (const ForwardBatch::StateSave& sv : batch_->state_saves)
    kv_->state_pos(sv.slot, layer) = sv.pos + 1;
}

// A sequence's first token at position 0 starts from zeros; at p > 0 the state must be at p
// and the tokens consecutive (a recurrent state only moves forward, one token at a time).
void CpuBackend::check_state(int layer, size_t seq, bool zero_conv, bool zero_delta) {
  const ForwardBatch& b = *batch_;
  const std::vector<int32_t>& toks = seq_tokens_[seq];
  if (toks.empty()) return;
  const int slot = b.state_slots[seq];
  const int32_t p0 = b.pos[size_t(toks[0])];
  for (size_t i = 1; i < toks.size(); ++i)
    check(b.pos[size_t(toks[i])] == p0 + int32_t(i),
          "internal: a recurrent model's batch has a sequence's positions out of order");
  if (p0 == 0) {
    if (zero_conv) std::fill_n(kv_->conv_state(slot, layer), kv_->conv_state_floats(), 0.0f);
    if (zero_delta) std::fill_n(kv_->delta_state(slot, layer), kv_->delta_state_floats(), 0.0f);
    return;
  }
  const int32_t at = kv_->state_pos(slot, layer);
  if (at != p0)
    throw Error("this model's recurrent state is at position " + std::to_string(at) +
                " and cannot continue at position " + std::to_string(p0) +
                ": a linear-attention state only moves forward (evaluate again from position 0)");
}

void CpuBackend::short_conv(int layer, Act x, const float* w, int K, Act o, const float* bias) {
  const size_t n = batch_->size(), C = x.len;
  for (size_t s = 0; s < seq_tokens_.size(); ++s) check_state(layer, s, true, false);
  const float* in_rows = in(x);
  float* out_rows = out(o, n);
  const size_t n_blocks = (C + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  const size_t n_seqs = seq_tokens_.size();
  static const std::vector<float> ones(kConvChannelsPerTask, 1.0f);
  pool_.run(n_seqs * n_blocks, [&](size_t u0, size_t u1) {
    for (size_t u = u0; u < u1; ++u) {
      const size_t s = u / n_blocks, c0 = (u % n_blocks) * kConvChannelsPerTask;
      const size_t c1 = std::min(C, c0 + kConvChannelsPerTask);
      float* state = kv_->conv_state(batch_->state_slots[s], layer);
      for (const int32_t t : seq_tokens_[s]) {
        float* y = &out_rows[size_t(t) * C];
        short_conv_cols(&in_rows[size_t(t) * C], C, c0, c1, w, size_t(K), state, y, bias);
        kern_.swiglu(y + c0, ones.data(), c1 - c0, y + c0);  // silu-v1: silu_ref(acc) * 1
        if (save_at_[size_t(t)] >= 0) {  // a snapshot: these channels of every state row
          float* dst = kv_->conv_state(save_at_[size_t(t)], layer);
          for (size_t j = 0; j + 1 < size_t(K); ++j)
            std::copy(state + j * C + c0, state + j * C + c1, dst + j * C + c0);
        }
      }
    }
  });
}

void CpuBackend::l2norm_heads(Act x, size_t width, size_t head_dim, float eps, size_t rows) {
  float* a = in(x);
  const size_t heads = width / head_dim;
  const auto dot = kern_.dot_f32;
  pool_.run(rows, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t)
      for (size_t h = 0; h < heads; ++h)
        l2norm_ref(&a[t * x.len + h * head_dim], head_dim, eps, dot);
  });
}

void CpuBackend::delta_gates(Act a, Act b, const float* dt_bias, const float* A, size_t rows) {
  float* ga = in(a);
  float* gb = in(b);
  for (size_t t = 0; t < rows; ++t)
    delta_gates_ref(&ga[t * a.len], &gb[t * b.len], dt_bias, A, a.len);
}

void CpuBackend::delta_net(int layer, Act qkv, Act g, Act beta, Act o, const DeltaNetSpec& sp) {
  const size_t n = batch_->size();
  for (size_t s = 0; s < seq_tokens_.size(); ++s) check_state(layer, s, false, true);
  const auto dot = kern_.dot_f32;
  const size_t Hk = size_t(sp.n_k_heads), Hv = size_t(sp.n_v_heads), Dk = size_t(sp.d_k),
               Dv = size_t(sp.d_v), r = Hv / Hk;
  const float* x = in(qkv);
  const float* gr = in(g);
  const float* br = in(beta);
  float* y = out(o, n);
  if (fast_) {
    // Fast mode: the chunked form over this pass's tokens of each sequence, in chunks of
    // kFastChunk (the chunks follow the batch, so the bits do too).
    const size_t n_seqs = seq_tokens_.size();
    // (checked before the threads start: a throw inside a worker would end the process)
    for (const auto& toks : seq_tokens_)
      check(toks.empty() || size_t(toks.back() - toks.front()) + 1 == toks.size(),
            "internal: fast mode needs a sequence's tokens in consecutive batch rows");
    pool_.run(n_seqs * Hv, [&](size_t u0, size_t u1) {
      for (size_t u = u0; u < u1; ++u) {
        const size_t s = u / Hv, h = u % Hv, kh = sp.tiled ? h % Hk : h / r;
        float* S = kv_->delta_state(batch_->state_slots[s], layer) + h * Dv * Dk;
        const std::vector<int32_t>& toks = seq_tokens_[s];
        // A sequence's tokens in one pass are consecutive rows of the batch (the engine and
        // eval add them so); the chunk's rows are read at the batch's stride.
        for (size_t c0 = 0, n_c = 0; c0 < toks.size(); c0 += n_c) {
          // Chunks of kFastChunk, ending early at a snapshot's token.
          n_c = std::min(kFastChunk, toks.size() - c0);
          for (size_t i = 0; i < n_c; ++i)
            if (save_at_[size_t(toks[c0 + i])] >= 0) {
              n_c = i + 1;
              break;
            }
          const size_t t0 = size_t(toks[c0]);
          const float* row = &x[t0 * qkv.len];
          delta_chunk_fast(S, Dk, Dv, n_c, row + kh * Dk, row + Hk * Dk + kh * Dk, qkv.len,
                           row + 2 * Hk * Dk + h * Dv, qkv.len, &gr[t0 * g.len + h],
                           &br[t0 * beta.len + h], g.len, sp.scale, &y[t0 * o.len + h * Dv], o.len,
                           dot);
          const int32_t save = save_at_[t0 + n_c - 1];
          if (save >= 0) std::copy(S, S + Dv * Dk, kv_->delta_state(save, layer) + h * Dv * Dk);
        }
      }
    });
    advance_states(layer);
    return;
  }
  const size_t row_blocks = (Dv + kStateRowsPerTask - 1) / kStateRowsPerTask;
  const size_t per_seq = Hv * row_blocks, n_seqs = seq_tokens_.size();
  const auto rows_fn = kern_.delta_rows;  // null: delta_rule_rows over dot_f32
  pool_.run(n_seqs * per_seq, [&](size_t u0, size_t u1) {
    for (size_t u = u0; u < u1; ++u) {
      const size_t s = u / per_seq, h = (u % per_seq) / row_blocks;
      const size_t j0 = (u % row_blocks) * kStateRowsPerTask;
      const size_t j1 = std::min(Dv, j0 + kStateRowsPerTask);
      const size_t kh = sp.tiled ? h % Hk : h / r;  // the value head's key head
      float* S = kv_->delta_state(batch_->state_slots[s], layer) + h * Dv * Dk;
      for (const int32_t ti : seq_tokens_[s]) {
        const size_t t = size_t(ti);
        const float* row = &x[t * qkv.len];
        const float *qh = row + kh * Dk, *kh_ = row + Hk * Dk + kh * Dk,
                    *vh = row + 2 * Hk * Dk + h * Dv;
        if (rows_fn)
          rows_fn(S, Dk, j0, j1, qh, kh_, vh, gr[t * g.len + h], br[t * beta.len + h], sp.scale,
                  &y[t * o.len + h * Dv]);
        else
          delta_rule_rows(S, Dk, j0, j1, qh, kh_, vh, gr[t * g.len + h], br[t * beta.len + h],
                          sp.scale, &y[t * o.len + h * Dv], dot);
        if (save_at_[t] >= 0) {  // a snapshot: these rows of this head
          float* dst = kv_->delta_state(save_at_[t], layer) + h * Dv * Dk;
          std::copy(S + j0 * Dk, S + j1 * Dk, dst + j0 * Dk);
        }
      }
    }
  });
  advance_states(layer);
}

void CpuBackend::ssm_scan(int layer, Act xbc, Act dt, const float* dt_bias, const float* A,
                          const float* D, Act o, const SsmSpec& sp) {
  const size_t n = batch_->size();
  for (size_t s = 0; s < seq_tokens_.size(); ++s) check_state(layer, s, false, true);
  const size_t H = size_t(sp.n_heads), P = size_t(sp.head_dim), N = size_t(sp.d_state),
               per_group = H / size_t(sp.n_groups), I = H * P;
  const float* x = in(xbc);
  const float* d = in(dt);
  float* y = out(o, n);
  const size_t row_blocks = (P + kStateRowsPerTask - 1) / kStateRowsPerTask;
  const size_t per_seq = H * row_blocks, n_seqs = seq_tokens_.size();
  const auto dot = kern_.dot_f32;
  pool_.run(n_seqs * per_seq, [&](size_t u0, size_t u1) {
    for (size_t u = u0; u < u1; ++u) {
      const size_t s = u / per_seq, h = (u % per_seq) / row_blocks;
      const size_t p0 = (u % row_blocks) * kStateRowsPerTask,
                   p1 = std::min(P, p0 + kStateRowsPerTask);
      const size_t g = h / per_group;
      float* S = kv_->delta_state(batch_->state_slots[s], layer) + h * P * N;
      for (const int32_t ti : seq_tokens_[s]) {
        const size_t t = size_t(ti);
        const float* row = &x[t * xbc.len];
        const float step = softplus_ref(d[t * dt.len + h] + dt_bias[h]);
        const float dA = exp_ref(step * A[h]);
        ssm_scan_rows(S, N, p0, p1, row + h * P, row + I + g * N,
                      row + I + (size_t(sp.n_groups) + g) * N, step, dA, D[h],
                      &y[t * o.len + h * P], dot);
        if (save_at_[t] >= 0) {  // a snapshot: these rows of this head
          float* dst = kv_->delta_state(save_at_[t], layer) + h * P * N;
          std::copy(S + p0 * N, S + p1 * N, dst + p0 * N);
        }
      }
    }
  });
  advance_states(layer);
}

void CpuBackend::rmsnorm_groups(Act x, const float* w, float eps, size_t group, size_t rows) {
  float* a = in(x);
  const size_t groups = x.len / group;
  const auto norm = kern_.rmsnorm;
  pool_.run(rows, [&](size_t t0, size_t t1) {
    for (size_t t = t0; t < t1; ++t)
      for (size_t g = 0; g < groups; ++g) {
        float* v = &a[t * x.len + g * group];
        norm(v, w + g * group, eps, group, v);
      }
  });
}

void CpuBackend::relu_sqr(Act x, size_t rows) {
  float* a = in(x);
  for (size_t i = 0; i < rows * x.len; ++i) {
    const float r = a[i] > 0.0f ? a[i] : 0.0f;
    a[i] = r * r;
  }
}

void CpuBackend::mul_sigmoid(Act x, Act g, size_t rows) {
  float* a = in(x);
  const float* b = in(g);
  pool_.run(rows, [&](size_t t0, size_t t1) {
    for (size_t i = t0 * x.len; i < t1 * x.len; ++i) a[i] = a[i] * sigmoid_ref(b[i]);
  });
}

}  // namespace tzero
