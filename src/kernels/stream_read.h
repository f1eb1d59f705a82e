// The machine's streaming-read rate: the ceiling of decode, which reads every weight once per
// token. `tzero bench` measures it in the same run, on the same thread pool, and prints each
// decode's weight-read rate as a fraction of it (docs/BENCHMARKS.md, "roofline").
//
// How: a buffer far larger than any last-level cache is written once (its pages faulted in),
// then each of the pool's threads reads its slice with the widest loads this CPU has (AVX-512,
// AVX2, or 64-bit words; chosen from CPUID at run time) into independent accumulators, nothing
// else, as 8 parts side by side in 256-byte turns: one Intel core read 12 GB/s from one stream
// and 20 from several, so a one-stream probe would have set the ceiling 40% low. The rate of a read
// is bytes / wall time of the whole pool; the result is the best of the reads (the ceiling, so the
// fraction is conservative).
#pragma once

#include <cstddef>
#include <string>

#include "base/thread_pool.h"

namespace tzero {

struct StreamRead {
  double gb_per_s = 0;  // best of the reads, 1e9 bytes per second
  double median_gb_per_s = 0;
  size_t bytes = 0;  // size of the buffer read each time
  int reads = 0;
  int threads = 0;
  std::string loads;  // "avx512", "avx2" or "u64"
};

constexpr size_t kStreamReadDefaultBytes = size_t(512) << 20;

// Reads a fresh buffer of `bytes` (rounded down to 4 KiB per thread) `reads` times on pool's
// threads. Throws tzero::Error when the buffer cannot be allocated.
StreamRead measure_stream_read(ThreadPool& pool, size_t bytes = kStreamReadDefaultBytes,
                               int reads = 5);

}  // namespace tzero
