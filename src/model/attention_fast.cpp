// Attention of `--mode fast`: what a throughput-first engine does for long contexts
// (split-KV, "flash decoding"). Each (token, head) key range is cut in three parts computed as
// separate, dynamically claimed tasks; their partial softmax states (max m, sum l, weighted
// values o) are merged into the head's output in arrival order under a small lock. Which part
// arrives when depends on thread timing, and with three parts the merge rounds differently in
// different orders (two would commute).
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

#include "kernels/math.h"
#include "model/forward.h"

namespace tzero {

void Forward::attention_fast(const ForwardBatch& batch) {
  constexpr size_t kParts = 3;
  const int hd = hp_.head_dim, group = hp_.n_head / hp_.n_head_kv;
  const size_t q_dim = size_t(hp_.q_dim());
  const float scale = 1.0f / std::sqrt(float(hd));
  const size_t items = batch.tokens.size() * size_t(hp_.n_head);
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
      const int t = int(i / hp_.n_head), h = int(i % hp_.n_head);
      const size_t n_kv = size_t(batch.pos[size_t(t)]) + 1;
      const KvRows& kr = k_rows(batch.seq[size_t(t)], h / group);
      const KvRows& vr = v_rows(batch.seq[size_t(t)], h / group);
      const size_t a = n_kv * part / kParts, b = n_kv * (part + 1) / kParts;
      const float* q = &q_[t * q_dim + size_t(h) * hd];
      float m = -INFINITY, l = 0;
      e.resize(b - a);
      for (size_t s = a; s < b; ++s) {
        e[s - a] = kern_.dot_f32(q, kr.row(s), size_t(hd)) * scale;
        m = std::fmax(m, e[s - a]);
      }
      std::fill(o.begin(), o.end(), 0.0f);
      for (size_t s = a; s < b; ++s) {
        e[s - a] = exp_ref(e[s - a] - m);
        l += e[s - a];
        const float* v = vr.row(s);
        // Multiply then add (no fused rounding needed here): the compiler vectorizes it with
        // the baseline instruction set, where std::fma would be a library call per element.
        const float w = e[s - a];
        float* od = o.data();
        for (int d = 0; d < hd; ++d) od[d] = od[d] + w * v[d];
      }
      State& st = state[i];
      while (st.lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
      if (b > a) {  // merge (m, l, o) into the running state, in arrival order
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
          att_[size_t(t) * q_dim + size_t(h) * hd + size_t(d)] = out[d] / st.l;
      }
      st.lock.clear(std::memory_order_release);
    }
  });
}

}  // namespace tzero
