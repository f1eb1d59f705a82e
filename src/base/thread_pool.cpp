#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/error.h"

namespace tzero {

namespace {
// How long the caller waits for a blocked worker to wake and claim its slice before computing it
// itself (a futex wake-up takes 5-50 us; a descheduled worker, milliseconds).
constexpr std::chrono::microseconds kWakeGrace{50};

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
  claimed_.reset(new std::atomic<uint64_t>[size_t(n_threads)]);
  spinning_.reset(new std::atomic<bool>[size_t(n_threads)]);
  for (int i = 0; i < n_threads; ++i) {
    claimed_[size_t(i)].store(0);
    spinning_[size_t(i)].store(false);
  }
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
  if (begin >= end) return;
  try {
    (*job_)(begin, end);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
}

bool ThreadPool::claim(int index, uint64_t generation) {
  std::atomic<uint64_t>& c = claimed_[size_t(index)];
  uint64_t seen = c.load(std::memory_order_acquire);
  while (seen < generation)
    if (c.compare_exchange_weak(seen, generation, std::memory_order_acq_rel)) return true;
  return false;
}

void ThreadPool::run(size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  if (n_threads_ == 1) {
    fn(0, n);
    return;
  }
  error_ = nullptr;
  job_ = &fn;
  job_n_ = n;
  // Every worker slice counts as pending until it is claimed and done; a slice the caller
  // takes over is claimed and done here.
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  const uint64_t g = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  generation_.notify_all();
  const auto t0 = std::chrono::steady_clock::now();
  do_slice(0);
  const auto t1 = std::chrono::steady_clock::now();
  // The slices no worker has claimed. A spinning worker claims within nanoseconds: one that has
  // not was descheduled, and its slice is taken over at once. A worker that was blocked is
  // waking up (5-50 us): it gets as long as slice 0 took (at most kWakeGrace; nothing while
  // workers are found descheduled) before its slice is taken over, since computing it here
  // costs about that.
  const auto grace = late_runs_.load(std::memory_order_relaxed) > 0
                         ? std::chrono::steady_clock::duration::zero()
                         : std::min<std::chrono::steady_clock::duration>(t1 - t0, kWakeGrace);
  bool late = false;
  for (int i = 1; i < n_threads_; ++i) {
    const bool was_spinning = spinning_[size_t(i)].load(std::memory_order_relaxed);
    if (!was_spinning && grace > grace.zero())
      for (int k = 0; claimed_[size_t(i)].load(std::memory_order_acquire) < g; ++k) {
        cpu_relax();
        if ((k & 63) == 63 && std::chrono::steady_clock::now() - t1 > grace) break;
      }
    if (claim(i, g)) {  // its worker has not started: compute it here
      late = late || was_spinning;
      do_slice(i);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  int lr = late_runs_.load(std::memory_order_relaxed);
  late_runs_.store(late ? std::min(lr + 8, 256) : std::max(lr - 1, 0), std::memory_order_relaxed);
  // Wait for the slices workers are computing: spin briefly (the common case is a short
  // matmul), then block; with late workers around, block at once.
  const int spin_limit = late_runs_.load(std::memory_order_relaxed) > 0 ? 0 : spin_limit_ / 8;
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    cpu_relax();
    if (spin >= spin_limit) {
      int p = pending_.load(std::memory_order_acquire);
      if (p != 0) pending_.wait(p, std::memory_order_acquire);
    }
  }
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    const int spin_limit = late_runs_.load(std::memory_order_relaxed) > 0 ? 0 : spin_limit_;
    std::atomic<bool>& spinning = spinning_[size_t(index)];
    spinning.store(spin_limit > 0, std::memory_order_relaxed);
    for (int spin = 0; g == seen; ++spin) {
      cpu_relax();
      if (spin >= spin_limit) {
        spinning.store(false, std::memory_order_relaxed);
        generation_.wait(g, std::memory_order_acquire);
      }
      g = generation_.load(std::memory_order_acquire);
    }
    spinning.store(false, std::memory_order_relaxed);
    seen = g;
    if (stop_.load()) return;
    // The run may be over already (the caller took this slice): then nothing to do.
    if (!claim(index, g)) continue;
    do_slice(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace tzero
