// The avx512 set's kernels over rows in the Rows16 layout (kernels/rows16.h), by type: for their
// test and tz_bench_decode --layout rows16 (sessions reach them as KernelSet::rows16_*); callable
// only where the CPU runs the avx512 set (AVX-512 F/BW/VL/DQ and VNNI).
#pragma once

#include "format/tensor_type.h"
#include "kernels/kernel_set.h"

namespace tzero::x86 {

// The kernel for rows of a type with the layout (rows16_applies; KernelSet::rows16_*'s contract),
// else nullptr.
GemmFn avx512_rows16_kernel(TensorType t);

}  // namespace tzero::x86
