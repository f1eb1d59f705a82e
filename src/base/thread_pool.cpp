#include "base/thread_pool.h"

#include "base/error.h"

namespace tzero {

namespace {
// A spin-wait hint (x86 PAUSE): frees the core's pipeline for a sibling thread while waiting.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  check(n_threads >= 1 && n_threads <= 1024, "thread count must be between 1 and 1024");
  // Spinning only pays when every thread has a core: with more threads than cores a spinning
  // thread takes the time slice of the one it waits for, so block at once.
  const unsigned cores = std::thread::hardware_concurrency();
  spin_limit_ = cores != 0 && unsigned(n_threads) > cores ? 0 : 4000;
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::do_slice(int index) {
  const size_t t = size_t(n_threads_);
  const size_t begin = job_n_ * size_t(index) / t;
  const size_t end = job_n_ * size_t(index + 1) / t;
  if (begin < end) (*job_)(begin, end);
}

void ThreadPool::run(size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  if (n_threads_ == 1) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  pending_.store(n_threads_ - 1);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  do_slice(0);
  // Wait for the workers: spin briefly (the common case is a short matmul), then block.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    cpu_relax();
    if (spin > spin_limit_ / 8) {
      int p = pending_.load(std::memory_order_acquire);
      if (p != 0) pending_.wait(p, std::memory_order_acquire);
    }
  }
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen; ++spin) {
      cpu_relax();
      if (spin > spin_limit_) generation_.wait(g, std::memory_order_acquire);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    do_slice(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace tzero
