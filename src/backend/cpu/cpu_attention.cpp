// Attention on the CPU backend (backend/cpu/cpu_backend.h).
//
// Deterministic: each (token, query head) is one attention_head call (attn-v1) over positions
// 0..pos of its sequence, read through the sequence's block table (KvRows), so neither the
// blocks a sequence got nor its batch mates change the bits.
//
// Fast (--mode fast): what a throughput-first engine does for long contexts (split-KV, "flash
// decoding"). Each (token, head) key range is cut in three parts computed as separate,
// dynamically claimed tasks; their partial softmax states (max m, sum l, weighted values o) are
// merged into the head's output in arrival order under a small lock. Which part arrives when
// depends on thread timing, and with three parts the merge rounds differently in different
// orders (two would commute).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "kernels/math.h"

namespace tzero {

void CpuBackend::gather_kv_rows(int il, size_t n_kvh, size_t hd) {
  const ForwardBatch& b = *batch_;
  const KvStore& kv = *kv_;
  const size_t n_seqs = b.tables.size(), kv_dim = kv.kv_dim();
  n_kvh_ = n_kvh;
  seq_len_.assign(n_seqs, 0);
  for (size_t i = 0; i < b.size(); ++i)
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

void CpuBackend::attention_canonical(const float* q, float* att, const AttentionSpec& a) {
  const ForwardBatch& b = *batch_;
  const size_t hd = size_t(a.head_dim), n_head = size_t(a.n_head);
  const size_t q_dim = n_head * hd;
  const int group = a.n_head / a.n_head_kv;
  pool_.run(b.size() * n_head, [&](size_t i0, size_t i1) {
    thread_local std::vector<float> scores;
    for (size_t i = i0; i < i1; ++i) {
      const size_t t = i / n_head;
      const int h = int(i % n_head), s = b.seq[t];
      const size_t n_kv = size_t(b.pos[t]) + 1;  // causal: positions 0 .. pos
      if (scores.size() < n_kv) scores.resize(n_kv);
      kern_.attention_head(&q[t * q_dim + size_t(h) * hd], k_rows(s, h / group),
                           v_rows(s, h / group), n_kv, hd, a.scale, scores.data(),
                           &att[t * q_dim + size_t(h) * hd]);
    }
  });
}

void CpuBackend::attention_fast(const float* q_all, float* att, const AttentionSpec& a) {
  constexpr size_t kParts = 3;
  const ForwardBatch& batch = *batch_;
  const int hd = a.head_dim, n_head = a.n_head, group = a.n_head / a.n_head_kv;
  const size_t q_dim = size_t(n_head) * size_t(hd);
  const float scale = a.scale;
  const size_t items = batch.size() * size_t(n_head);
  struct State {
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    int parts_done = 0;
    float m = -INFINITY, l = 0;
  };
  std::unique_ptr<State[]> state(new State[items]);
  std::vector<float> acc(items * size_t(hd), 0.0f);  // o of each (token, head)
  std::atomic<size_t> next{0};
  pool_.run(size_t(pool_.size()), [&](size_t, size_t) {
    std::vector<float> e;
    std::vector<float> o(static_cast<size_t>(hd));
    for (size_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < kParts * items;) {
      const size_t i = task / kParts, part = task % kParts;
      const int t = int(i / size_t(n_head)), h = int(i % size_t(n_head));
      const size_t n_kv = size_t(batch.pos[size_t(t)]) + 1;
      const KvRows& kr = k_rows(batch.seq[size_t(t)], h / group);
      const KvRows& vr = v_rows(batch.seq[size_t(t)], h / group);
      const size_t lo = n_kv * part / kParts, hi = n_kv * (part + 1) / kParts;
      const float* q = &q_all[size_t(t) * q_dim + size_t(h) * size_t(hd)];
      float m = -INFINITY, l = 0;
      e.resize(hi - lo);
      for (size_t s = lo; s < hi; ++s) {
        e[s - lo] = kern_.dot_f32(q, kr.row(s), size_t(hd)) * scale;
        m = std::fmax(m, e[s - lo]);
      }
      std::fill(o.begin(), o.end(), 0.0f);
      for (size_t s = lo; s < hi; ++s) {
        e[s - lo] = exp_ref(e[s - lo] - m);
        l += e[s - lo];
        const float* v = vr.row(s);
        // Multiply then add (no fused rounding needed here): the compiler vectorizes it with
        // the baseline instruction set, where std::fma would be a library call per element.
        const float w = e[s - lo];
        float* od = o.data();
        for (int d = 0; d < hd; ++d) od[d] = od[d] + w * v[d];
      }
      State& st = state[i];
      while (st.lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
      if (hi > lo) {  // merge (m, l, o) into the running state, in arrival order
        const float m_new = std::fmax(st.m, m);
        const float c_old = st.m == -INFINITY ? 0.0f : exp_ref(st.m - m_new);
        const float c_new = exp_ref(m - m_new);
        st.l = st.l * c_old + l * c_new;
        float* out = &acc[i * size_t(hd)];
        for (int d = 0; d < hd; ++d) out[d] = out[d] * c_old + o[size_t(d)] * c_new;
        st.m = m_new;
      }
      if (++st.parts_done == int(kParts)) {
        const float* out = &acc[i * size_t(hd)];
        for (int d = 0; d < hd; ++d)
          att[size_t(t) * q_dim + size_t(h) * size_t(hd) + size_t(d)] = out[d] / st.l;
      }
      st.lock.clear(std::memory_order_release);
    }
  });
}

}  // namespace tzero
