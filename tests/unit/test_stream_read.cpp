// The streaming-read probe behind `tzero bench`'s roofline (kernels/stream_read.h): its
// contract (bytes per thread rounded to pages, best >= median, the loads it used), not its
// speed (docs/BENCHMARKS.md has the numbers).
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/stream_read.h"

// Proves: each thread reads a page-rounded slice of the buffer, every read is timed, the best
// rate is reported with the median below it, and the loads are the widest this CPU has.
TEST(StreamRead, ReportsBestAndMedianOverPageRoundedSlices) {
  for (int threads : {1, 3}) {
    tzero::ThreadPool pool(threads);
    const tzero::StreamRead r = tzero::measure_stream_read(pool, (size_t(8) << 20) + 1000, 3);
    EXPECT_EQ(r.threads, threads);
    EXPECT_EQ(r.reads, 3);
    EXPECT_EQ(r.bytes % (4096 * size_t(threads)), 0u);
    EXPECT_LE(r.bytes, (size_t(8) << 20) + 1000);
    EXPECT_GT(r.bytes, (size_t(8) << 20) - 4096 * size_t(threads));
    EXPECT_GT(r.gb_per_s, 0);
    EXPECT_GE(r.gb_per_s, r.median_gb_per_s);
#if defined(__x86_64__)
    EXPECT_EQ(r.loads, __builtin_cpu_supports("avx512f") ? "avx512"
                       : __builtin_cpu_supports("avx2")  ? "avx2"
                                                         : "u64");
#else
    EXPECT_EQ(r.loads, "u64");
#endif
  }
}

// Proves: a buffer smaller than a page per thread, or no reads, is refused with a message.
TEST(StreamRead, RefusesNothingToRead) {
  tzero::ThreadPool pool(2);
  EXPECT_THROW(tzero::measure_stream_read(pool, 4096, 3), tzero::Error);
  EXPECT_THROW(tzero::measure_stream_read(pool, size_t(1) << 20, 0), tzero::Error);
}
