// A persistent pool of worker threads with a static partition of work.
//
// Contract (DETERMINISM.md, L2): run(n, fn) splits the index range [0, n) into `size()`
// contiguous slices, slice i = [n*i/T, n*(i+1)/T), and calls fn(begin, end) once per non-empty
// slice. Which thread computes an index never changes what is computed: callers hand out
// independent outputs (matmul rows, attention heads), never parts of one reduction. The caller's
// thread does slice 0, so a pool of size 1 has no worker threads at all.
//
// On a shared machine a worker may not be running when a job arrives (another process holds its
// core for a time slice of milliseconds). So each slice is claimed before it is computed: the
// caller, done with slice 0, claims and computes the slices no worker has started, and waits
// only for slices being computed. The partition, and so every bit, stays the same. While the
// caller keeps finding spinning workers that had not started (descheduled: the machine is
// oversubscribed), nobody spins: workers block at once, leaving the cores to whoever needs
// them, until runs find the workers on time again.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tzero {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Blocks until every slice is done. Not reentrant: fn must not call run(). An exception from
  // fn (on any thread) is rethrown here, after every slice has finished.
  void run(size_t n, const std::function<void(size_t begin, size_t end)>& fn);

 private:
  void worker_loop(int index);
  void do_slice(int index);  // catches what fn throws into error_
  // Claims slice i of run `generation` (true once per slice and run: that thread computes it).
  bool claim(int index, uint64_t generation);

  int n_threads_;
  int spin_limit_ = 4000;  // PAUSE iterations a waiting worker spins before it blocks
  std::vector<std::thread> workers_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t job_n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_;  // per slice: the run that claimed it
  std::atomic<int> pending_{0};                       // claimed slices not finished
  std::unique_ptr<std::atomic<bool>[]> spinning_;     // per worker: spinning for the next run
  // Evidence of a shared machine: runs where a worker that was spinning (so should have claimed
  // its slice at once) had not, because it was not running. > 0: nobody spins.
  std::atomic<int> late_runs_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;  // the first exception of the current run
};

}  // namespace tzero
