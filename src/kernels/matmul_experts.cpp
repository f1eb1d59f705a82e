#include "kernels/matmul_experts.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace tzero {

namespace {

// Bytes of one activation row as the weight type's gemm takes it (kernels/kernel_set.h).
size_t act_row_bytes(TensorType t, size_t K) {
  if (takes_act_q8(t)) return K / kQBlock * sizeof(ActQ8);
  if (t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K ||
      t == TensorType::IQ4_XS || t == TensorType::Q3_K || t == TensorType::Q2_K)
    return K / kSuperBlock * sizeof(ActQ8K);
  return K * sizeof(float);
}

constexpr size_t kRowChunk = 16;  // weight rows per unit of the partition
static_assert(kRowChunk % 16 == 0, "a unit is whole Rows16 panels (MatrixGemm::row_quantum)");
constexpr size_t kRowCost = 2;  // a weight row's read, in units of one token's dot product

}  // namespace

void matmul_experts(ThreadPool& pool, const KernelSet& kernels, const ExpertMatrix& w,
                    const float* x, bool x_per_slot, const int32_t* ids, size_t n_tok, size_t k,
                    float* y, ExpertScratch& s) {
  const size_t K = size_t(w.first.n_cols), N = size_t(w.first.n_rows), E = size_t(w.n_expert);
  const size_t n_slots = n_tok * k;
  const TensorType type = w.first.type;
  const MatrixGemm gemm(kernels, w.first);  // every expert's rows alike

  // Group the slots by expert (counting sort: ascending expert, then ascending slot).
  // Slots with a negative id are left out (their experts run on another rank).
  s.start.assign(E + 1, 0);
  for (size_t i = 0; i < n_slots; ++i) {
    if (ids[i] < 0) continue;
    check(size_t(ids[i]) < E, "internal: expert id out of range");
    ++s.start[size_t(ids[i]) + 1];
  }
  for (size_t e = 0; e < E; ++e) s.start[e + 1] += s.start[e];
  if (s.start[E] == 0) return;  // every slot left out: nothing to read, not even x
  s.slot_order.resize(size_t(s.start[E]));
  s.fill.assign(s.start.begin(), s.start.end() - 1);
  for (size_t i = 0; i < n_slots; ++i)
    if (ids[i] >= 0) s.slot_order[size_t(s.fill[size_t(ids[i])]++)] = int32_t(i);

  // The activations once, then gathered by expert (row-local quantization: same bits).
  const size_t n_x = x_per_slot ? n_slots : n_tok, arb = act_row_bytes(type, K);
  const auto* xq =
      static_cast<const uint8_t*>(quantize_activations(kernels, type, x, n_x, K, s.quant));
  auto x_row = [&](size_t i) {  // the activation row of slot_order[i]
    const size_t slot = size_t(s.slot_order[i]);
    return xq + (x_per_slot ? slot : slot / k) * arb;
  };
  // Experts with one slot read its row where it is; the others get theirs gathered.
  s.gathered.resize(n_slots * arb);
  for (size_t e = 0; e < E; ++e)
    if (s.start[e + 1] - s.start[e] > 1)
      for (size_t i = size_t(s.start[e]); i < size_t(s.start[e + 1]); ++i)
        std::memcpy(&s.gathered[i * arb], x_row(i), arb);
  s.grouped.resize(n_slots * N);

  // The units: kRowChunk weight rows of one chosen expert, costing rows * (tokens + kRowCost);
  // each thread takes a contiguous run of units of about equal cost.
  using Unit = ExpertScratch::Unit;
  std::vector<Unit>& units = s.units;
  units.clear();
  size_t total = 0;
  for (size_t e = 0; e < E; ++e) {
    const size_t n_e = size_t(s.start[e + 1] - s.start[e]);
    if (n_e == 0) continue;
    for (size_t r0 = 0; r0 < N; r0 += kRowChunk) {
      const size_t r1 = std::min(N, r0 + kRowChunk);
      total += (r1 - r0) * (n_e + kRowCost);
      units.push_back({uint32_t(e), uint32_t(r0), uint32_t(r1), total});
    }
  }
  const size_t T = size_t(pool.size());
  pool.run(T, [&](size_t thread, size_t) {
    // Units whose cost ends in (total * thread / T, total * (thread + 1) / T].
    const size_t lo = total * thread / T, hi = total * (thread + 1) / T;
    auto first = std::upper_bound(units.begin(), units.end(), lo,
                                  [](size_t c, const Unit& u) { return c < u.cost_end; });
    for (auto u = first; u != units.end() && u->cost_end <= hi;) {
      // Merge the run of units of one expert into one call.
      auto v = u;
      while (v + 1 != units.end() && (v + 1)->cost_end <= hi && (v + 1)->expert == u->expert) ++v;
      const size_t e = u->expert, g0 = size_t(s.start[e]), n_e = size_t(s.start[e + 1]) - g0;
      const size_t r0 = u->r0, nr = v->r1 - u->r0;
      const Matrix m = w.expert(int64_t(e));
      if (n_e == 1) {  // one slot: straight into its row of y
        gemm(m.row(int64_t(r0)), nr, x_row(g0), 1, y + size_t(s.slot_order[g0]) * N + r0, N);
      } else {  // then back to slot order, the rows this thread computed
        gemm(m.row(int64_t(r0)), nr, &s.gathered[g0 * arb], n_e, &s.grouped[g0 * N + r0], N);
        for (size_t i = g0; i < g0 + n_e; ++i)
          std::memcpy(y + size_t(s.slot_order[i]) * N + r0, &s.grouped[i * N + r0],
                      nr * sizeof(float));
      }
      u = v + 1;
    }
  });
}

void matmul_experts_ref(const ExpertMatrix& w, const float* x, bool x_per_slot, const int32_t* ids,
                        size_t n_tok, size_t k, float* y) {
  const size_t K = size_t(w.first.n_cols), N = size_t(w.first.n_rows);
  for (size_t s = 0; s < n_tok * k; ++s) {
    if (ids[s] < 0) continue;  // (left out: matmul_experts)
    const Matrix m = w.expert(ids[s]);
    const float* xr = x + (x_per_slot ? s : s / k) * K;
    for (size_t r = 0; r < N; ++r) y[s * N + r] = matmul_row_ref(m, r, xr);
  }
}

}  // namespace tzero
