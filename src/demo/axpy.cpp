#include "demo/axpy.h"

#include <atomic>
#include <functional>
#include <thread>

#include "base/rng.h"

namespace tzero {

const char* axpy_version_name(AxpyVersion v) {
  switch (v) {
    case AxpyVersion::SpinLock:
      return "spin lock (arrival order)";
    case AxpyVersion::TurnLock:
      return "turn lock (thread-id order)";
    default:
      return "fixed-order tree (no locks)";
  }
}

AxpyProblem make_axpy_problem(size_t n_inputs, size_t length, uint64_t seed) {
  AxpyProblem p;
  p.length = length;
  SplitMix64 rng(seed);
  for (size_t i = 0; i < n_inputs; ++i) {
    std::vector<float> x(length);
    // A spread of magnitudes makes the rounding of a sum depend on its order.
    for (auto& v : x) v = (2.0f * rng.uniform() - 1.0f) * float(1 << (rng.next() % 12));
    p.xs.push_back(std::move(x));
  }
  return p;
}

std::vector<float> axpy_sequential(const AxpyProblem& p) {
  std::vector<float> y(p.length, 0.0f);
  for (const auto& x : p.xs)
    for (size_t k = 0; k < p.length; ++k) y[k] += p.a * x[k];
  return y;
}

namespace {

void run_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int t = 1; t < n; ++t) ts.emplace_back(fn, t);
  fn(0);
  for (auto& t : ts) t.join();
}

}  // namespace

std::vector<float> axpy_accumulate(const AxpyProblem& p, AxpyVersion v, int n_threads) {
  const size_t n = p.xs.size(), L = p.length;
  std::vector<float> y(L, 0.0f);
  auto range = [&](int t) {  // contiguous inputs of thread t
    return std::pair<size_t, size_t>{n * size_t(t) / size_t(n_threads),
                                     n * size_t(t + 1) / size_t(n_threads)};
  };
  if (v == AxpyVersion::SpinLock) {
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    run_threads(n_threads, [&](int t) {
      std::vector<float> ax(L);
      const auto [i0, i1] = range(t);
      for (size_t i = i0; i < i1; ++i) {
        for (size_t k = 0; k < L; ++k) ax[k] = p.a * p.xs[i][k];
        while (lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
        for (size_t k = 0; k < L; ++k) y[k] += ax[k];
        lock.clear(std::memory_order_release);
      }
    });
  } else if (v == AxpyVersion::TurnLock) {
    std::atomic<int> turn{0};
    run_threads(n_threads, [&](int t) {
      const auto [i0, i1] = range(t);
      std::vector<std::vector<float>> ax(i1 - i0, std::vector<float>(L));
      for (size_t i = i0; i < i1; ++i)  // the products in parallel, before taking the turn
        for (size_t k = 0; k < L; ++k) ax[i - i0][k] = p.a * p.xs[i][k];
      while (turn.load(std::memory_order_acquire) != t) std::this_thread::yield();
      for (const auto& v_i : ax)
        for (size_t k = 0; k < L; ++k) y[k] += v_i[k];
      turn.store(t + 1, std::memory_order_release);
    });
  } else {
    run_threads(n_threads, [&](int t) {
      const size_t k0 = L * size_t(t) / size_t(n_threads),
                   k1 = L * size_t(t + 1) / size_t(n_threads);
      std::vector<float> level(n);
      for (size_t k = k0; k < k1; ++k) {
        for (size_t i = 0; i < n; ++i) level[i] = p.a * p.xs[i][k];
        // Pairwise tree over the inputs: (0+1), (2+3), ... then pairs of those, ...
        for (size_t width = n; width > 1;) {
          const size_t half = width / 2;
          for (size_t i = 0; i < half; ++i) level[i] = level[2 * i] + level[2 * i + 1];
          if (width % 2) level[half] = level[width - 1];  // an odd one out moves up unchanged
          width = half + width % 2;
        }
        y[k] = n ? level[0] : 0.0f;
      }
    });
  }
  return y;
}

}  // namespace tzero
