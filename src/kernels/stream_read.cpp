#include "kernels/stream_read.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tzero {

namespace {

// Each reader sums its slice's 64-bit words into independent accumulators (so the loads, not an
// add chain, set the pace) and returns the sum, which the caller keeps (nothing is optimised
// away). It reads the slice as kStreams equal parts side by side, 256 bytes of each in turn: one
// core's hardware prefetchers keep a few lines in flight per stream, and on the Intel Xeon VM
// one stream read 12 GB/s where 8 side by side read 20-21 (2 MiB pages, AVX-512 loads; 4
// streams in 1 KiB turns 17.6, in 4 KiB turns 12.5). n is a multiple of kStreams * 256 bytes.
constexpr size_t kStreams = 8;

uint64_t read_u64(const uint8_t* p, size_t n) {
  const size_t part = n / kStreams;
  uint64_t s[8] = {};
  for (size_t i = 0; i < part; i += 256)
    for (size_t k = 0; k < kStreams; ++k) {
      const uint64_t* w = reinterpret_cast<const uint64_t*>(p + k * part + i);
      for (size_t j = 0; j < 32; j += 8)
        for (int l = 0; l < 8; ++l) s[l] += w[j + size_t(l)];
    }
  uint64_t t = 0;
  for (uint64_t v : s) t += v;
  return t;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, size_t n) {
  const size_t part = n / kStreams;
  __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                  _mm256_setzero_si256()};
  for (size_t i = 0; i < part; i += 256)
    for (size_t k = 0; k < kStreams; ++k)
      for (size_t j = 0; j < 256; j += 128)
        for (int l = 0; l < 4; ++l)
          s[l] = _mm256_add_epi64(s[l], _mm256_load_si256(reinterpret_cast<const __m256i*>(
                                            p + k * part + i + j + 32 * size_t(l))));
  const __m256i t = _mm256_add_epi64(_mm256_add_epi64(s[0], s[1]), _mm256_add_epi64(s[2], s[3]));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), t);
  return out[0] + out[1] + out[2] + out[3];
}

__attribute__((target("avx512f"))) uint64_t read_avx512(const uint8_t* p, size_t n) {
  const size_t part = n / kStreams;
  __m512i s[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                  _mm512_setzero_si512()};
  for (size_t i = 0; i < part; i += 256)
    for (size_t k = 0; k < kStreams; ++k)
      for (int l = 0; l < 4; ++l)
        s[l] = _mm512_add_epi64(s[l], _mm512_load_si512(p + k * part + i + 64 * size_t(l)));
  alignas(64) uint64_t out[8];
  _mm512_store_si512(out,
                     _mm512_add_epi64(_mm512_add_epi64(s[0], s[1]), _mm512_add_epi64(s[2], s[3])));
  uint64_t t = 0;
  for (uint64_t v : out) t += v;
  return t;
}
#endif

using Reader = uint64_t (*)(const uint8_t*, size_t);

Reader best_reader(std::string* name) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    *name = "avx512";
    return read_avx512;
  }
  if (__builtin_cpu_supports("avx2")) {
    *name = "avx2";
    return read_avx2;
  }
#endif
  *name = "u64";
  return read_u64;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StreamRead measure_stream_read(ThreadPool& pool, size_t bytes, int reads) {
  StreamRead r;
  r.threads = pool.size();
  // Each thread's slice: whole 4 KiB pages, so each of a reader's kStreams parts is a multiple
  // of 256 bytes.
  const size_t per = bytes / size_t(r.threads) / 4096 * 4096;
  static_assert(4096 % (kStreams * 256) == 0);
  check(per > 0 && reads > 0, "stream read: nothing to read");
  r.bytes = per * size_t(r.threads);
  r.reads = reads;
  const Reader reader = best_reader(&r.loads);
  // In 2 MiB pages where the kernel gives them, as the weights are read by default
  // (base/mapped_file.h): 4 KiB pages read 20-30% slower on the machines measured.
  const HugePageBuffer mem(r.bytes);
  check(bool(mem), "stream read: cannot map " + std::to_string(r.bytes >> 20) + " MiB");
  uint8_t* buf = mem.data();
  // Each thread writes its own slice, so its pages sit where that thread reads them (NUMA).
  pool.run(size_t(r.threads), [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) std::memset(buf + i * per, int(i + 1), per);
  });
  std::vector<double> rates;
  std::vector<uint64_t> sums(size_t(r.threads));
  uint64_t keep = 0;
  for (int k = 0; k < reads; ++k) {
    const double t0 = seconds_now();
    pool.run(size_t(r.threads), [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) sums[i] = reader(buf + i * per, per);
    });
    rates.push_back(double(r.bytes) / (seconds_now() - t0) / 1e9);
    for (uint64_t s : sums) keep += s;
  }
  // The sums depend on the bytes read: handing them to an empty asm keeps the reads.
  __asm__ volatile("" : : "r"(keep) : "memory");
  std::sort(rates.begin(), rates.end());
  r.gb_per_s = rates.back();
  r.median_gb_per_s = rates[rates.size() / 2];
  return r;
}

}  // namespace tzero
