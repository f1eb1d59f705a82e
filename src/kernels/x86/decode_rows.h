// How the x86 decode kernels walk a thread's rows (avx2_common.h, for_row_streams): 4 ranges side
// by side, or one row at a time. Chosen at run time from CPUID, never at build time; the bits
// are the same either way (each row keeps its own accumulators and order).
//
// Side by side on Intel: one core read 12 GB/s from one stream and 20 from several (Xeon VM,
// docs/BENCHMARKS.md, "Second session"), and F16 decode went from 12.2 to 21.0 GB/s at one
// thread. Side by side on AMD Zen 5 (family 0x1A) too: F16 from memory at 0.59-0.68 of the bus
// one row at a time against 0.75-0.80 side by side, the 32-element types 0.64-0.81 against
// 0.75-0.93 (Q8_0 alone a little slower: 0.72-0.86 against 0.71-0.79; "Fourth session"). One
// row at a time elsewhere: on Zen 4, F16 over 2-8 rows at once read 12-15 GB/s from memory
// against 19 for one row (the first session of issue #33). TZ_DECODE_ROWS=side or =one
// overrides the choice (for measuring; any other value is named on stderr and ignored).
#pragma once

namespace tzero::x86 {

bool decode_rows_side_by_side();

// Tests: both ways on any x86 CPU. Not thread-safe against running kernels.
void set_decode_rows_side_by_side(bool on);

}  // namespace tzero::x86
