// The matmul of `--mode fast`: what a throughput-first engine does, without the reproducibility
// contract. Threads claim chunks of kRowsPerTask weight rows dynamically from an atomic counter
// instead of the static partition of kernels/matmul.cpp, so which thread computes which rows
// changes from run to run. Every chunk is still whole rows through the batched kernel (one dot
// product per output, in the canonical order), so these bits do not change: fast mode's
// run-to-run differences come from its split attention (model/attention_fast.cpp). Splitting
// the reduction (K) across threads with atomic adds was measured and dropped: it halved decode
// speed on a CPU (docs/DETERMINISM.md, "fast mode").
#include <algorithm>
#include <atomic>

#include "base/error.h"
#include "kernels/matmul.h"

namespace tzero {

namespace {
constexpr size_t kRowsPerTask = 128;
}  // namespace

void matmul_fast(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x,
                 size_t n_tokens, float* y, MatmulScratch& scratch) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const MatrixGemm gemm(k, w);
  const void* xk = quantize_activations(k, w.type, x, n_tokens, K, scratch);
  if (K == 0) return;
  static_assert(kRowsPerTask % 16 == 0, "a task is whole Rows16 panels (MatrixGemm::row_quantum)");
  const size_t n_tasks = (N + kRowsPerTask - 1) / kRowsPerTask;
  std::atomic<size_t> next{0};
  pool.run(size_t(pool.size()), [&](size_t, size_t) {
    for (size_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < n_tasks;) {
      const size_t r0 = task * kRowsPerTask, nr = std::min(kRowsPerTask, N - r0);
      gemm(w.row(int64_t(r0)), nr, xk, n_tokens, y + r0, N);
    }
  });
}

}  // namespace tzero
