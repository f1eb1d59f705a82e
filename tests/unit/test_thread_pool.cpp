// The thread pool's static partition (src/base/thread_pool.h) and the L2/L3 properties of matmul
// built on it (src/kernels/matmul.h): the output bits depend neither on the thread count nor on
// the batch (its size, a row's slot in it, its batch mates).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/dot.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace tzero {
namespace {

struct Slice {
  size_t begin, end;
  std::thread::id thread;
  bool operator<(const Slice& o) const { return begin < o.begin; }
};

std::vector<Slice> record_slices(ThreadPool& pool, size_t n) {
  std::mutex mu;
  std::vector<Slice> slices;
  pool.run(n, [&](size_t b, size_t e) {
    std::lock_guard<std::mutex> lock(mu);
    slices.push_back({b, e, std::this_thread::get_id()});
  });
  std::sort(slices.begin(), slices.end());
  return slices;
}

// Runs body on another thread; if it has not finished after `seconds`, reports a deadlock and
// exits the process (a hung pool cannot be joined, and waiting for ctest's timeout says less).
void with_watchdog(int seconds, const std::function<void()>& body) {
  std::packaged_task<void()> task(body);
  std::future<void> done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::seconds(seconds)) == std::future_status::timeout) {
    std::fprintf(stderr, "ThreadPool test: no progress after %d s, deadlock\n", seconds);
    std::fflush(stderr);
    std::_Exit(3);
  }
  runner.join();
  done.get();
}

// Proves: for every pool size 1..9 (more threads than this machine's cores included) and every
// n in 0..1000, run(n, fn) calls fn once per non-empty slice i = [n*i/T, n*(i+1)/T), the slices
// cover [0, n) exactly once, the caller's thread does slice 0 (and any slice whose worker had not
// started: on a busy machine; never a slice twice), a worker at most one, and n = 0 calls
// nothing.
TEST(ThreadPool, StaticPartitionCoversRangeExactlyOnce) {
  const std::thread::id caller = std::this_thread::get_id();
  for (int T = 1; T <= 9; ++T) {
    ThreadPool pool(T);
    ASSERT_EQ(pool.size(), T);
    for (size_t n = 0; n <= 1000; ++n) {
      const std::vector<Slice> got = record_slices(pool, n);
      std::vector<Slice> want;
      for (size_t i = 0; i < size_t(T); ++i) {
        const size_t b = n * i / size_t(T), e = n * (i + 1) / size_t(T);
        if (b < e) want.push_back({b, e, {}});
      }
      ASSERT_EQ(got.size(), want.size()) << "T=" << T << " n=" << n;
      std::vector<int> covered(n, 0);
      std::vector<std::thread::id> threads;
      for (size_t s = 0; s < got.size(); ++s) {
        ASSERT_EQ(got[s].begin, want[s].begin) << "T=" << T << " n=" << n << " slice " << s;
        ASSERT_EQ(got[s].end, want[s].end) << "T=" << T << " n=" << n << " slice " << s;
        for (size_t k = got[s].begin; k < got[s].end; ++k) ++covered[k];
        if (got[s].thread != caller) threads.push_back(got[s].thread);
      }
      for (size_t k = 0; k < n; ++k) ASSERT_EQ(covered[k], 1) << "T=" << T << " n=" << n;
      std::sort(threads.begin(), threads.end());
      ASSERT_EQ(std::unique(threads.begin(), threads.end()), threads.end()) << "T=" << T;
      if (n / size_t(T) > 0) {  // slice 0 is non-empty
        ASSERT_EQ(got[0].thread, caller) << "T=" << T << " n=" << n;
      }
    }
  }
}

// Proves: with more workers than cores (here 32 on this machine's few), workers are often not
// running when a job arrives; the caller then computes their slices itself (so it never waits
// for a descheduled thread), and still every index is computed exactly once, by its slice.
TEST(ThreadPool, TheCallerTakesOverSlicesOfWorkersNotRunning) {
  ThreadPool pool(32);
  const std::thread::id caller = std::this_thread::get_id();
  size_t taken_over = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const std::vector<Slice> got = record_slices(pool, 320);
    ASSERT_EQ(got.size(), 32u);
    for (size_t s = 0; s < got.size(); ++s) {
      ASSERT_EQ(got[s].begin, 10 * s);
      ASSERT_EQ(got[s].end, 10 * s + 10);
      if (s > 0 && got[s].thread == caller) ++taken_over;
    }
  }
  EXPECT_GT(taken_over, 0u) << "no slice was ever taken over";
  std::printf("[ note ] the caller took over %zu of %d worker slices\n", taken_over, 200 * 31);
}

// Proves: an exception from any slice (the caller's or a worker's) comes out of run() after every
// slice finished, and the pool keeps working.
TEST(ThreadPool, ExceptionsComeOutOfRunAfterEverySlice) {
  ThreadPool pool(4);
  for (size_t bad = 0; bad < 4; ++bad) {
    std::atomic<int> done{0};
    EXPECT_THROW(pool.run(4,
                          [&](size_t b, size_t) {
                            if (b == bad) throw std::runtime_error("slice failed");
                            done.fetch_add(1);
                          }),
                 std::runtime_error);
    EXPECT_EQ(done.load(), 3) << "slice " << bad;
    std::atomic<int> all{0};
    pool.run(100, [&](size_t b, size_t e) { all.fetch_add(int(e - b)); });
    EXPECT_EQ(all.load(), 100);
  }
}

// Proves: a pool of one runs the whole range inline on the caller's thread, in one call.
TEST(ThreadPool, PoolOfOneRunsInline) {
  ThreadPool pool(1);
  const std::vector<Slice> s = record_slices(pool, 77);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].begin, 0u);
  EXPECT_EQ(s[0].end, 77u);
  EXPECT_EQ(s[0].thread, std::this_thread::get_id());
}

// Proves: thread counts outside 1..1024 are rejected with tzero::Error.
TEST(ThreadPool, RejectsBadThreadCounts) {
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(-3), Error);
  EXPECT_THROW(ThreadPool(1025), Error);
}

// Proves: thousands of back-to-back runs neither deadlock nor lose a slice, and run() returns
// only after every slice's (plain, non-atomic) writes are done and visible to the caller; pools
// are also created and destroyed many times, idle or right after a run.
TEST(ThreadPool, RepeatedRunsDoNotDeadlock) {
  with_watchdog(240, [] {
    for (int T : {2, 3, 4, 8}) {
      ThreadPool pool(T);
      std::vector<int> out(64);
      for (int iter = 0; iter < 5000; ++iter) {
        const size_t n = 1 + size_t(iter) % 61;
        pool.run(n, [&](size_t b, size_t e) {
          for (size_t k = b; k < e; ++k) out[k] = iter;
        });
        for (size_t k = 0; k < n; ++k) ASSERT_EQ(out[k], iter) << "T=" << T << " iter " << iter;
      }
    }
    for (int iter = 0; iter < 300; ++iter) {
      ThreadPool idle(1 + iter % 9);
      ThreadPool used(2 + iter % 7);
      std::atomic<size_t> total{0};
      used.run(100, [&](size_t b, size_t e) { total += e - b; });
      ASSERT_EQ(total.load(), 100u);
    }
  });
}

// ---- matmul ---------------------------------------------------------------------------------

struct TestMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;
};

TestMatrix make_matrix(TensorType t, int64_t rows, int64_t cols, uint64_t seed) {
  SplitMix64 rng(seed);
  TestMatrix tm;
  const size_t rb = row_bytes(t, size_t(cols));
  tm.bytes.resize(rb * size_t(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = 2.0f * rng.uniform() - 1.0f;
    quantize_row(t, row.data(), tm.bytes.data() + size_t(r) * rb, row.size());
  }
  tm.m = Matrix{t, tm.bytes.data(), rows, cols, rb};
  return tm;
}

// Row r of w times one activation row, straight from the dot kernels (per-row activation
// quantization for the Q types): what the canonical order says each output element is.
float expected_element(const Matrix& w, size_t r, const float* x) {
  const size_t K = size_t(w.n_cols);
  const uint8_t* wr = w.row(int64_t(r));
  std::vector<ActQ8> xq(K / kQBlock);
  switch (w.type) {
    case TensorType::F32:
      return dot_f32_ref(reinterpret_cast<const float*>(wr), x, K);
    case TensorType::F16:
      return dot_f16_ref(reinterpret_cast<const uint16_t*>(wr), x, K);
    case TensorType::BF16:
      return dot_bf16_ref(reinterpret_cast<const uint16_t*>(wr), x, K);
    case TensorType::Q8_0:
      quantize_act_q8(x, xq.data(), K);
      return dot_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(wr), xq.data(), K);
    case TensorType::Q4_0:
      quantize_act_q8(x, xq.data(), K);
      return dot_q4_0_ref(reinterpret_cast<const BlockQ4_0*>(wr), xq.data(), K);
    default:
      ADD_FAILURE() << "unexpected type";
      return 0;
  }
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Proves (L2 + L3, and L4 for the variants): for every weight type, with an odd row count, pool
// sizes 1, 2, 3, 4, 7 and batch sizes 1..9, every output element equals bit for bit the same
// row computed alone by the scalar dot kernel (and by matmul_row_ref), whatever the thread
// count, the batch size, the slot of the row in the batch, its batch mates and the kernel set
// (scalar and every SIMD variant this CPU runs). Rows enter batches at rotating slots, and one
// MatmulScratch is reused across all calls (it grows and shrinks).
TEST(ThreadPoolMatmul, BitIdenticalAcrossThreadsAndBatches) {
  const int64_t n_rows = 37;
  const size_t n_src = 9;
  for (TensorType t :
       {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0}) {
    const bool q = t == TensorType::Q8_0 || t == TensorType::Q4_0;
    const int64_t K = q ? 224 : 173;  // 7 blocks; or an odd length with a 13-element tail
    const TestMatrix tm = make_matrix(t, n_rows, K, 100 + uint64_t(t));
    SplitMix64 rng(7);
    std::vector<float> src(n_src * size_t(K));
    for (auto& v : src) v = 4.0f * rng.uniform() - 2.0f;
    std::vector<float> want(n_src * size_t(n_rows));
    for (size_t s = 0; s < n_src; ++s)
      for (size_t r = 0; r < size_t(n_rows); ++r) {
        want[s * n_rows + r] = expected_element(tm.m, r, &src[s * K]);
        ASSERT_EQ(bits(matmul_row_ref(tm.m, r, &src[s * K])), bits(want[s * n_rows + r]))
            << traits(t).name << " r=" << r;
      }
    MatmulScratch scratch;
    for (int T : {1, 2, 3, 4, 7}) {
      ThreadPool pool(T);
      for (const KernelSet* ks : available_kernels())
        for (size_t batch = 1; batch <= 9; ++batch) {
          std::vector<size_t> slot_src(batch);
          std::vector<float> x(batch * size_t(K)), y(batch * size_t(n_rows), -1.0f);
          for (size_t j = 0; j < batch; ++j) {
            slot_src[j] = (batch * 5 + j * 4 + size_t(T)) % n_src;
            std::copy_n(&src[slot_src[j] * K], K, &x[j * K]);
          }
          matmul(pool, *ks, tm.m, x.data(), batch, y.data(), scratch);
          for (size_t j = 0; j < batch; ++j)
            for (size_t r = 0; r < size_t(n_rows); ++r)
              ASSERT_EQ(bits(y[j * n_rows + r]), bits(want[slot_src[j] * n_rows + r]))
                  << traits(t).name << " " << ks->name << " threads=" << T << " batch=" << batch
                  << " slot=" << j << " row=" << r;
        }
    }
  }
}

// Proves: on a larger odd-shaped matrix (301 x 512, batch 5) all pool sizes 1..9 and all kernel
// sets give byte-identical outputs for every type, the K-quants included (the whole output
// buffer compared at once).
TEST(ThreadPoolMatmul, WholeOutputIdenticalForPoolSizes1To9) {
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                       TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                       TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K, TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_XS}) {
    const TestMatrix tm = make_matrix(t, 301, 512, 200 + uint64_t(t));
    SplitMix64 rng(8);
    std::vector<float> x(5 * 512);
    for (auto& v : x) v = 2.0f * rng.uniform() - 1.0f;
    std::vector<float> first;
    for (int T = 1; T <= 9; ++T) {
      ThreadPool pool(T);
      for (const KernelSet* ks : available_kernels()) {
        MatmulScratch scratch;
        std::vector<float> y(5 * 301);
        matmul(pool, *ks, tm.m, x.data(), 5, y.data(), scratch);
        if (first.empty()) first = y;
        ASSERT_EQ(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)), 0)
            << traits(t).name << " " << ks->name << " threads=" << T;
      }
    }
  }
}

}  // namespace
}  // namespace tzero
