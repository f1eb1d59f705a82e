// The matmul of `--mode fast`: what a throughput-first engine does, on purpose without the
// reproducibility contract. Threads claim (row chunk, K slice) tasks dynamically from an atomic
// counter, compute partial dot products over their slice of the reduction, and add them into
// the output with atomic float adds in arrival order. With several threads the arrival order,
// and so the rounding of the sum, changes from run to run. Splitting K costs memory locality
// on a CPU (rows are read in strided pieces), so callers split only the longest reductions
// (k_slices = 3, the fewest partial sums whose order changes the bits) and take 1 elsewhere.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/error.h"
#include "kernels/matmul.h"

namespace tzero {

namespace {
constexpr size_t kRowsPerTask = 128;
// the fewest partial sums whose arrival order changes the bits

// Where token t's activations for columns [k0, ...) start in the (possibly quantized) buffer.
const void* act_at(TensorType type, const void* x, size_t K, size_t t, size_t k0) {
  switch (type) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
      return static_cast<const ActQ8*>(x) + (t * K + k0) / kQBlock;
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return static_cast<const ActQ8K*>(x) + (t * K + k0) / kSuperBlock;
    default:
      return static_cast<const float*>(x) + t * K + k0;
  }
}
}  // namespace

void matmul_fast(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x,
                 size_t n_tokens, float* y, MatmulScratch& scratch, size_t k_slices) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const GemmFn gemm = k.gemm_for(w.type);
  check(gemm != nullptr, std::string("matmul: no kernel for ") + traits(w.type).name);
  const void* xk = quantize_activations(k, w.type, x, n_tokens, K, scratch);
  // K slices: multiples of the block size (16 for float rows).
  const size_t block = std::max<size_t>(traits(w.type).block_size, 16);
  const size_t n_blocks = (K + block - 1) / block;
  const size_t n_slices = std::max<size_t>(1, std::min(n_blocks, k_slices));
  const size_t row_chunks = (N + kRowsPerTask - 1) / kRowsPerTask;
  const size_t n_tasks = row_chunks * n_slices;
  if (n_slices > 1) std::memset(y, 0, n_tokens * N * sizeof(float));
  std::atomic<size_t> next{0};
  pool.run(size_t(pool.size()), [&](size_t, size_t) {
    float part[kRowsPerTask];
    for (size_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;) {
      const size_t rc = task / n_slices, s = task % n_slices;
      const size_t r0 = rc * kRowsPerTask, nr = std::min(kRowsPerTask, N - r0);
      const size_t k0 = std::min(K, n_blocks * s / n_slices * block);
      const size_t k1 = std::min(K, n_blocks * (s + 1) / n_slices * block);
      if (k0 >= k1) continue;
      const size_t k0_bytes = row_bytes(w.type, k0);
      if (n_slices == 1) {  // whole rows: the batched kernel, written straight into y
        gemm(w.row(int64_t(r0)), w.row_bytes, xk, K, nr, n_tokens, y + r0, N);
        continue;
      }
      for (size_t t = 0; t < n_tokens; ++t) {
        gemm(w.row(int64_t(r0)) + k0_bytes, w.row_bytes, act_at(w.type, xk, K, t, k0), k1 - k0, nr,
             1, part, 1);
        for (size_t r = 0; r < nr; ++r)
          std::atomic_ref<float>(y[t * N + r0 + r]).fetch_add(part[r], std::memory_order_relaxed);
      }
    }
  });
}

}  // namespace tzero
