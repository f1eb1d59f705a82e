// Micro-benchmarks of the kernels, per kernel set (scalar reference and every SIMD variant this
// CPU runs), with bytes/s and FLOP/s counters, plus a streaming-read probe of memory bandwidth
// to compare them with. Run: build-bench/bench/tz_bench_kernels [--benchmark_filter=...].
//
// Counters: "bytes/s" counts the bytes a call must read and write at least once (weights,
// activations, outputs); "FLOP/s" counts a multiply-add as 2 FLOP. Both are rates over the
// benchmark's time (real time for the threaded ones).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/attention_heads.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace {

using benchmark::Counter;
using tzero::KernelSet;
using tzero::TensorType;

std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  tzero::SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

bool is_quant(TensorType t) {
  return t == TensorType::Q8_0 || t == TensorType::Q4_0;
}

void set_rates(benchmark::State& state, double bytes, double flop) {
  state.counters["bytes/s"] =
      Counter(bytes * double(state.iterations()), Counter::kIsRate, Counter::OneK::kIs1024);
  state.counters["FLOP/s"] = Counter(flop * double(state.iterations()), Counter::kIsRate);
}

// A weight matrix of `rows` x `cols` in type t, random values in [-1, 1).
struct Weights {
  std::vector<uint8_t> bytes;
  tzero::Matrix m;
  Weights(TensorType t, size_t rows, size_t cols, uint64_t seed) {
    const size_t rb = tzero::row_bytes(t, cols);
    bytes.resize(rb * rows);
    const std::vector<float> src = random_floats(rows * cols, seed);
    for (size_t r = 0; r < rows; ++r)
      tzero::quantize_row(t, src.data() + r * cols, bytes.data() + r * rb, cols);
    m = tzero::Matrix{t, bytes.data(), int64_t(rows), int64_t(cols), rb};
  }
};

// One dot product of length n (a 1 x 1 gemm call of the kernel set; for the Q types the
// activation row is quantized once, outside the timed loop).
void bm_dot(benchmark::State& state, const KernelSet* k, TensorType t, size_t n) {
  const Weights w(t, 1, n, 1);
  const std::vector<float> x = random_floats(n, 2);
  std::vector<tzero::ActQ8> xq(n / tzero::kQBlock);
  if (is_quant(t)) k->quantize_act_q8(x.data(), xq.data(), n);
  const void* xp = is_quant(t) ? static_cast<const void*>(xq.data()) : x.data();
  const tzero::GemmFn gemm = k->gemm_for(t);
  float y = 0;
  for (auto _ : state) {
    gemm(w.bytes.data(), w.m.row_bytes, xp, n, 1, 1, &y, 1);
    benchmark::DoNotOptimize(y);
  }
  const double x_bytes = is_quant(t) ? double(xq.size() * sizeof(tzero::ActQ8)) : 4.0 * double(n);
  set_rates(state, double(w.m.row_bytes) + x_bytes, 2.0 * double(n));
}

// y (batch, 2048) = x (batch, 2048) W^T through tzero::matmul (activation quantization included).
void bm_matmul(benchmark::State& state, const KernelSet* k, TensorType t, size_t batch, int threads,
               size_t rows = 2048, size_t cols = 2048) {
  const Weights w(t, rows, cols, 3);
  const std::vector<float> x = random_floats(batch * cols, 4);
  std::vector<float> y(batch * rows);
  tzero::ThreadPool pool(threads);
  tzero::MatmulScratch scratch;
  for (auto _ : state) {
    tzero::matmul(pool, *k, w.m, x.data(), batch, y.data(), scratch);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_rates(state, double(w.bytes.size()) + 4.0 * double(batch * (rows + cols)),
            2.0 * double(rows) * double(cols) * double(batch));
}

void bm_rmsnorm(benchmark::State& state, const KernelSet* k, size_t n) {
  const std::vector<float> x = random_floats(n, 5), w = random_floats(n, 6, 0.5f, 1.5f);
  std::vector<float> out(n);
  for (auto _ : state) {
    k->rmsnorm(x.data(), w.data(), 1e-5f, n, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_rates(state, 12.0 * double(n), 4.0 * double(n));
}

// One query head over n_kv cached positions (K and V rows of head_dim floats, contiguous).
void bm_attention(benchmark::State& state, const KernelSet* k, size_t n_kv, size_t head_dim) {
  const std::vector<float> q = random_floats(head_dim, 7);
  const std::vector<float> kk = random_floats(n_kv * head_dim, 8);
  const std::vector<float> v = random_floats(n_kv * head_dim, 9);
  std::vector<float> out(head_dim);
  tzero::AttnScratch scratch;
  for (auto _ : state) {
    const float *kp = kk.data(), *vp = v.data();
    tzero::attention_heads(*k, q.data(), head_dim, 1, tzero::single_block(&kp, head_dim),
                           tzero::single_block(&vp, head_dim), n_kv, head_dim, 0.125f, scratch,
                           out.data(), head_dim);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_rates(state, 8.0 * double(n_kv * head_dim), 4.0 * double(n_kv * head_dim));
}

// exp_ref over 1M values in [-87, 88] (the scalar definition; the SIMD sets inline it).
void bm_exp(benchmark::State& state) {
  const size_t n = size_t(1) << 20;
  const std::vector<float> x = random_floats(n, 10, -87.0f, 88.0f);
  std::vector<float> y(n);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) y[i] = tzero::exp_ref(x[i]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] = Counter(8.0 * double(n) * double(state.iterations()),
                                      Counter::kIsRate, Counter::OneK::kIs1024);
  state.counters["exp/s"] = Counter(double(n) * double(state.iterations()), Counter::kIsRate);
}

// Streaming read of a 256 MiB buffer (far larger than any cache), split evenly between the
// benchmark's threads: the machine's achievable read bandwidth, for comparison.
std::vector<uint64_t>& bandwidth_buffer() {
  static std::vector<uint64_t> buf = [] {
    std::vector<uint64_t> b((size_t(256) << 20) / sizeof(uint64_t));
    for (size_t i = 0; i < b.size(); ++i) b[i] = i;  // touch every page
    return b;
  }();
  return buf;
}

void bm_memory_read(benchmark::State& state) {
  const std::vector<uint64_t>& buf = bandwidth_buffer();
  const size_t per = buf.size() / size_t(state.threads());
  const uint64_t* p = buf.data() + per * size_t(state.thread_index());
  for (auto _ : state) {
    uint64_t s[8] = {};
    for (size_t i = 0; i + 8 <= per; i += 8)
      for (int j = 0; j < 8; ++j) s[j] += p[i + j];
    uint64_t total = 0;
    for (uint64_t v : s) total += v;
    benchmark::DoNotOptimize(total);
  }
  state.counters["bytes/s"] = Counter(double(per * sizeof(uint64_t)) * double(state.iterations()),
                                      Counter::kIsRate, Counter::OneK::kIs1024);
}

// The same read with 32-byte loads and four independent streams per thread (the widest this
// build may use without -m flags: a target attribute, run only where CPUID has AVX2).
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint64_t* p, size_t n) {
  __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (size_t i = 0; i + 16 <= n; i += 16)
    for (int j = 0; j < 4; ++j)
      s[j] = _mm256_add_epi64(
          s[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4 * size_t(j))));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out),
                     _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3])));
  return out[0] + out[1] + out[2] + out[3];
}

void bm_memory_read_avx2(benchmark::State& state) {
  const std::vector<uint64_t>& buf = bandwidth_buffer();
  const size_t per = buf.size() / size_t(state.threads());
  const uint64_t* p = buf.data() + per * size_t(state.thread_index());
  for (auto _ : state) benchmark::DoNotOptimize(sum_avx2(p, per));
  state.counters["bytes/s"] = Counter(double(per * sizeof(uint64_t)) * double(state.iterations()),
                                      Counter::kIsRate, Counter::OneK::kIs1024);
}

const char* type_name(TensorType t) {
  return tzero::traits(t).name;
}

void register_all() {
  const TensorType types[] = {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                              TensorType::Q4_0};
  const std::vector<const KernelSet*> sets = tzero::available_kernels();
  // The scalar reference and the best variant for the (slow) matmuls; every set for the rest.
  std::vector<const KernelSet*> matmul_sets = {sets.front()};
  if (sets.size() > 1) matmul_sets.push_back(sets.back());

  benchmark::RegisterBenchmark("memory_read/256MiB", bm_memory_read)
      ->Threads(1)
      ->Threads(2)
      ->UseRealTime();
  if (__builtin_cpu_supports("avx2"))
    benchmark::RegisterBenchmark("memory_read_avx2/256MiB", bm_memory_read_avx2)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime();
  for (const KernelSet* k : sets)
    for (TensorType t : types)
      for (size_t n : {2048, 5632}) {
        const std::string name =
            std::string("dot/") + type_name(t) + "/" + k->name + "/" + std::to_string(n);
        benchmark::RegisterBenchmark(name.c_str(), bm_dot, k, t, n);
      }
  std::vector<TensorType> matmul_types(std::begin(types), std::end(types));
  matmul_types.push_back(TensorType::Q4_K);
  matmul_types.push_back(TensorType::Q6_K);
  for (const KernelSet* k : matmul_sets)
    for (TensorType t : matmul_types)
      for (size_t batch : {1, 16, 128})
        for (int threads : {1, 2}) {
          const std::string name = std::string("matmul2048/") + type_name(t) + "/" + k->name +
                                   "/batch" + std::to_string(batch) + "/threads" +
                                   std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), bm_matmul, k, t, batch, threads, 2048, 2048)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
  // The feed-forward shapes of a 1B model (TinyLlama: 5632 x 2048 up/gate, 2048 x 5632 down) at
  // a prefill batch, best variant only (float weights: also batch 16).
  for (TensorType t : matmul_types)
    for (auto [rows, cols] : {std::pair<size_t, size_t>{5632, 2048}, {2048, 5632}})
      for (size_t batch : {16, 128}) {
        const bool is_float = t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
        if (batch == 16 && !is_float) continue;
        const std::string name = std::string("matmul") + std::to_string(rows) + "x" +
                                 std::to_string(cols) + "/" + type_name(t) + "/" +
                                 matmul_sets.back()->name + "/batch" + std::to_string(batch) +
                                 "/threads1";
        benchmark::RegisterBenchmark(name.c_str(), bm_matmul, matmul_sets.back(), t, batch, 1, rows,
                                     cols)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
  // The AVX2 float gemm where AVX-512 is the best set (F16, prefill batches).
  if (sets.size() > 2)
    for (TensorType t : {TensorType::F16, TensorType::BF16})
      for (size_t batch : {16, 128}) {
        const std::string name = std::string("matmul2048/") + type_name(t) + "/" + sets[1]->name +
                                 "/batch" + std::to_string(batch) + "/threads1";
        benchmark::RegisterBenchmark(name.c_str(), bm_matmul, sets[1], t, batch, 1, 2048, 2048)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
  for (const KernelSet* k : sets) {
    for (size_t n : {2048, 5632})
      benchmark::RegisterBenchmark(
          (std::string("rmsnorm/") + k->name + "/" + std::to_string(n)).c_str(), bm_rmsnorm, k, n);
    for (size_t hd : {64, 128})
      benchmark::RegisterBenchmark(
          (std::string("attention_head/") + k->name + "/kv512/hd" + std::to_string(hd)).c_str(),
          bm_attention, k, size_t(512), hd);
  }
  benchmark::RegisterBenchmark("exp_ref/1M", bm_exp)->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string names;
  for (const KernelSet* k : tzero::available_kernels()) names += std::string(" ") + k->name;
  std::fprintf(stderr, "kernel sets on this CPU:%s\n", names.c_str());
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
