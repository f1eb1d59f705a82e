// Attention on the CPU backend (backend/cpu/cpu_backend.h).
//
// Deterministic: attn-v2 (kernels/attention.h) for each (token, query head) over positions
// 0..pos of its sequence, read through the sequence's block table (KvRows), so neither the
// blocks a sequence got nor its batch mates change the bits; attention_canonical below says
// how the work divides over threads.
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
#include "kernels/attention_heads.h"
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
      seq_rows_[(s * n_kvh + h) * 2] = KvRows{kp, bs, kv_dim, 0};
      seq_rows_[(s * n_kvh + h) * 2 + 1] = KvRows{vp, bs, kv_dim, 0};
      off += 2 * nb;
    }
  }
}

namespace {

// Cuts items [0, n) with costs cost(i) into `parts` contiguous ranges of about equal total cost:
// range p is [bounds[p], bounds[p + 1]). Which thread computes an item never changes its bits;
// this only balances causal prefill, whose late tokens attend to more positions.
template <typename Cost>
std::vector<size_t> balanced_ranges(size_t n, size_t parts, Cost cost) {
  std::vector<size_t> bounds(parts + 1, n);
  bounds[0] = 0;
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += double(cost(i));
  double acc = 0;
  size_t p = 1;
  for (size_t i = 0; i < n && p < parts; ++i) {
    acc += double(cost(i));
    while (p < parts && acc >= total * double(p) / double(parts)) bounds[p++] = i + 1;
  }
  return bounds;
}

}  // namespace

// Work items are (kv head, token): the group's query heads share each loaded key and value
// row. With enough items each thread takes whole items (attention_heads runs the position
// blocks in order); with few items and long contexts (decode) the position blocks of attn-v2
// are spread over the threads and merged afterwards, left to right. Both give the same bits.
void CpuBackend::attention_canonical(const float* q, float* att, const AttentionSpec& a) {
  const ForwardBatch& b = *batch_;
  const size_t hd = size_t(a.head_dim), n_head = size_t(a.n_head), n_kvh = size_t(a.n_head_kv);
  const size_t vd = a.v_dim > 0 ? size_t(a.v_dim) : hd;  // value and output head width
  const size_t group = n_head / n_kvh, q_dim = n_head * hd, o_dim = n_head * vd;
  const size_t n_tok = b.size(), n_items = n_tok * n_kvh, threads = size_t(pool_.size());
  // Item i is (kv head i / n_tok, token i % n_tok): consecutive items of a thread read the same
  // head's keys and values, which then stay in its cache.
  auto tok_of = [&](size_t item) { return item % n_tok; };
  auto kvh_of = [&](size_t item) { return int(item / n_tok); };
  auto seq_of = [&](size_t item) { return b.seq[tok_of(item)]; };
  // The positions a token attends to: lo_of .. pos (all of them without a window).
  const size_t window = size_t(a.window);
  auto lo_of = [&](size_t item) {
    const size_t n = size_t(b.pos[tok_of(item)]) + 1;
    return window > 0 && n > window ? n - window : 0;
  };
  auto n_kv_of = [&](size_t item) { return size_t(b.pos[tok_of(item)]) + 1 - lo_of(item); };
  auto keys = [&](size_t item) { return k_rows(seq_of(item), kvh_of(item)).from(lo_of(item)); };
  auto values = [&](size_t item) { return v_rows(seq_of(item), kvh_of(item)).from(lo_of(item)); };
  auto q_of = [&](size_t item) {  // offset of the item's first query head
    return tok_of(item) * q_dim + size_t(kvh_of(item)) * group * hd;
  };
  auto o_of = [&](size_t item) {  // offset of the item's first output head
    return tok_of(item) * o_dim + size_t(kvh_of(item)) * group * vd;
  };
  size_t max_kv = 0;
  for (size_t i = 0; i < n_tok; ++i) max_kv = std::max(max_kv, n_kv_of(i));

  if (threads == 1 || max_kv <= kAttnBlock || n_items >= 4 * threads) {
    const auto bounds = balanced_ranges(n_items, threads, n_kv_of);
    pool_.run(threads, [&](size_t p0, size_t p1) {
      thread_local AttnScratch scratch;
      for (size_t i = bounds[p0]; i < bounds[p1]; ++i)
        attention_heads(kern_, &q[q_of(i)], hd, group, keys(i), values(i), n_kv_of(i), hd, a.scale,
                        scratch, &att[o_of(i)], vd, a.softcap,
                        a.sinks ? a.sinks + size_t(kvh_of(i)) * group : nullptr, vd);
    });
    return;
  }

  // Few items, long contexts: units are (item, position block).
  struct Unit {
    size_t item, t0, t1;
    size_t s_off;  // offset of its scores in split_s_ (group rows of stride ld of its item)
  };
  std::vector<Unit> units;
  std::vector<size_t> item_ld(n_items), item_s(n_items);
  size_t s_total = 0;
  for (size_t i = 0; i < n_items; ++i) {
    const size_t n_kv = n_kv_of(i);
    item_ld[i] = (n_kv + 15) / 16 * 16;
    item_s[i] = s_total;
    for (size_t t0 = 0; t0 < n_kv; t0 += kAttnBlock)
      units.push_back({i, t0, std::min(n_kv, t0 + kAttnBlock), s_total + t0});
    s_total += group * item_ld[i];
  }
  const size_t n_units = units.size();
  split_s_.resize(s_total);
  split_m_.assign(n_units * group, -INFINITY);  // (unit, head) max of the unit's scores
  split_z_.resize(n_units * group);             // (unit, head) z_j
  split_o_.resize(n_units * group * vd);        // (unit, head, vd) o_j
  const auto bounds =
      balanced_ranges(n_units, threads, [&](size_t u) { return units[u].t1 - units[u].t0; });
  pool_.run(threads, [&](size_t p0, size_t p1) {  // scores
    for (size_t u = bounds[p0]; u < bounds[p1]; ++u) {
      const Unit& un = units[u];
      kern_.attn_scores(&q[q_of(un.item)], hd, group, keys(un.item), un.t0, un.t1, hd, a.scale,
                        &split_s_[un.s_off], item_ld[un.item], &split_m_[u * group]);
      if (a.softcap > 0)
        attn_softcap_ref(&split_s_[un.s_off], item_ld[un.item], group, un.t1 - un.t0, a.softcap,
                         &split_m_[u * group]);
    }
  });
  std::vector<float> m(n_items * group, -INFINITY);  // the max is exact in any order
  for (size_t u = 0; u < n_units; ++u)
    for (size_t g = 0; g < group; ++g)
      m[units[u].item * group + g] =
          std::fmax(m[units[u].item * group + g], split_m_[u * group + g]);
  if (a.sinks)  // the sink after the scores' max (attn-v2 SINK)
    for (size_t i = 0; i < n_items; ++i)
      attn_sink_max(group, a.sinks + size_t(kvh_of(i)) * group, &m[i * group]);
  pool_.run(threads, [&](size_t p0, size_t p1) {  // e, z_j and o_j of each block
    for (size_t u = bounds[p0]; u < bounds[p1]; ++u) {
      const Unit& un = units[u];
      kern_.attn_block(&split_s_[un.s_off], item_ld[un.item], group, &m[un.item * group],
                       values(un.item), un.t0, un.t1, vd, &split_z_[u * group],
                       &split_o_[u * group * vd], vd);
    }
  });
  std::vector<float> z(group);
  for (size_t u = 0; u < n_units; ++u) {  // merge left to right, then divide
    const Unit& un = units[u];
    float* o = &att[o_of(un.item)];
    attn_merge(group, vd, un.t0 == 0, &split_z_[u * group], &split_o_[u * group * vd], vd,
               &split_z_[(u - un.t0 / kAttnBlock) * group], o, vd);
    if (un.t1 == n_kv_of(un.item)) {
      float* zi = &split_z_[(u - un.t0 / kAttnBlock) * group];
      if (a.sinks)
        attn_sink_sum(group, a.sinks + size_t(kvh_of(un.item)) * group, &m[un.item * group], zi);
      attn_finish(group, vd, zi, o, vd);
    }
  }
}

void CpuBackend::attention_fast(const float* q_all, float* att, const AttentionSpec& a) {
  constexpr size_t kParts = 3;
  const ForwardBatch& batch = *batch_;
  const int kd = a.head_dim, n_head = a.n_head, group = a.n_head / a.n_head_kv;
  const int hd = a.v_dim > 0 ? a.v_dim : kd;  // value and output head width
  const size_t q_dim = size_t(n_head) * size_t(kd), o_dim = size_t(n_head) * size_t(hd);
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
      const size_t n_all = size_t(batch.pos[size_t(t)]) + 1;
      const size_t lo = a.window > 0 && n_all > size_t(a.window) ? n_all - size_t(a.window) : 0;
      const size_t n_kv = n_all - lo;
      const KvRows kr = k_rows(batch.seq[size_t(t)], h / group).from(lo);
      const KvRows vr = v_rows(batch.seq[size_t(t)], h / group).from(lo);
      const size_t p_lo = n_kv * part / kParts, p_hi = n_kv * (part + 1) / kParts;
      const float* q = &q_all[size_t(t) * q_dim + size_t(h) * size_t(kd)];
      float m = -INFINITY, l = 0;
      e.resize(p_hi - p_lo);
      for (size_t s = p_lo; s < p_hi; ++s) {
        e[s - p_lo] = kern_.dot_f32(q, kr.row(s), size_t(kd)) * scale;
        if (a.softcap > 0) e[s - p_lo] = softcap_ref(e[s - p_lo], a.softcap);
        m = std::fmax(m, e[s - p_lo]);
      }
      std::fill(o.begin(), o.end(), 0.0f);
      for (size_t s = p_lo; s < p_hi; ++s) {
        e[s - p_lo] = exp_ref(e[s - p_lo] - m);
        l += e[s - p_lo];
        const float* v = vr.row(s);
        // Multiply then add (no fused rounding needed here): the compiler vectorizes it with
        // the baseline instruction set, where std::fma would be a library call per element.
        const float w = e[s - p_lo];
        float* od = o.data();
        for (int d = 0; d < hd; ++d) od[d] = od[d] + w * v[d];
      }
      State& st = state[i];
      while (st.lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
      if (p_hi > p_lo) {  // merge (m, l, o) into the running state, in arrival order
        const float m_new = std::fmax(st.m, m);
        const float c_old = st.m == -INFINITY ? 0.0f : exp_ref(st.m - m_new);
        const float c_new = exp_ref(m - m_new);
        st.l = st.l * c_old + l * c_new;
        float* out = &acc[i * size_t(hd)];
        for (int d = 0; d < hd; ++d) out[d] = out[d] * c_old + o[size_t(d)] * c_new;
        st.m = m_new;
      }
      if (++st.parts_done == int(kParts)) {
        float* out = &acc[i * size_t(hd)];
        if (a.sinks) {  // the sink as one more part with no value
          const float sk = a.sinks[h];
          const float m_new = std::fmax(st.m, sk);
          const float c_old = st.m == -INFINITY ? 0.0f : exp_ref(st.m - m_new);
          st.l = st.l * c_old + exp_ref(sk - m_new);
          for (int d = 0; d < hd; ++d) out[d] = out[d] * c_old;
          st.m = m_new;
        }
        for (int d = 0; d < hd; ++d)
          att[size_t(t) * o_dim + size_t(h) * size_t(hd) + size_t(d)] = out[d] / st.l;
      }
      st.lock.clear(std::memory_order_release);
    }
  });
}

}  // namespace tzero
