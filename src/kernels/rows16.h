// The Rows16 layout: 16 rows of a Q4_K matrix interleaved block by block, so that one zmm of
// weights holds the same 4 bytes of 16 rows and VPDPBUSD computes 16 rows' partial sums at once
// against a broadcast 4 bytes of activations. No horizontal folds: a row's sums stay in its lane.
// The loader lays Q4_K out this way for a kernel set that has the kernel (the avx512 and amx
// sets: kernels/x86/gemm_q4k_rows16.h); it gives the bits of the scalar reference (dot-v1: per
// block the exact int32 A and B, acc[b % 8] fma'd, tree8), as does any kernel on the file's
// layout, and a set without it gets the rows unpacked (MatrixGemm, kernels/matmul.h). Issue #33:
// Q4_K decode from 0.55-0.64 of the bus to 0.81-0.90 (docs/BENCHMARKS.md, "Rows16").
//
// A panel is rows 16p .. 16p + 15, each of nb blocks of 144 bytes; panel byte offsets per block b
// (2304 bytes each, 16 x 144), for row r (0..15):
//   d:           b * 2304 + 2r + i                    (i < 2)
//   dmin:        b * 2304 + 32 + 2r + i               (i < 2)
//   scales[k]:   b * 2304 + 64 + 16k + r              (k < 12)
//   qs[32c + l]: b * 2304 + 256 + 64 (8c + l / 4) + 4r + l % 4    (c < 4, l < 32)
// It is a permutation of each panel's bytes. The last n_rows % 16 rows stay as in the file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tzero {

constexpr size_t kRows16 = 16;
constexpr size_t kRows16BlockBytes = 16 * 144;  // one Q4_K block of 16 rows

// Where byte `o` of a row's bytes (0 <= o < row_bytes) of panel row r lies in its panel.
size_t rows16_q4_k_offset(size_t r, size_t o);

// The n_rows / 16 whole panels of n_rows Q4_K rows of row_bytes each, in place.
void to_rows16_q4_k(uint8_t* rows, size_t n_rows, size_t row_bytes);
// From Rows16 (src) back to the file's layout (dst, no overlap), tail rows copied.
void from_rows16_q4_k(const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes);

}  // namespace tzero
