// The Rows16 layout: 16 rows of a K-quant (Q2_K .. Q6_K) or IQ4_XS matrix interleaved block by
// block, so that one zmm of weights holds the same 4 bytes of 16 rows and VPDPBUSD computes 16
// rows' partial sums at once against a broadcast 4 bytes of activations. No horizontal folds: a
// row's sums stay in its lane. The loader lays a type out this way for a kernel set that has its
// kernel (the avx512 and amx sets, every type here: kernels/x86/gemm_rows16.h); the kernels give
// the bits of the scalar reference (dot-v1), as does any kernel on the file's layout, and a set
// without them gets the rows unpacked (MatrixGemm, kernels/matmul.h). Issue #33: Q4_K decode from
// 0.55-0.64 of the bus to 0.81-0.90, Q2_K and Q3_K from 0.36-0.45 to 0.6-0.8 (docs/BENCHMARKS.md,
// "Rows16").
//
// A panel is rows 16p .. 16p + 15, each of nb blocks; block b of the panel is 16 blocks' bytes.
// A block's bytes are segments, in the file's order, each cut into units of 1, 2 or 4 bytes:
// unit j of the segment at offset f (unit size u) of row r lies at
//   b * 16 * block_bytes + 16 f + 16 u j + u r
// so that unit j of the 16 rows is 16 u consecutive bytes:
//   Q4_K (144 bytes): d (offset 0, u 2), dmin (2, u 2), scales (4, u 1), qs (16, u 4)
//   Q5_K (176 bytes): d (0, u 2), dmin (2, u 2), scales (4, u 1), qh (16, u 4), qs (48, u 4)
//   Q6_K (210 bytes): ql (0, u 4), qh (128, u 4), scales (192, u 1), d (208, u 2)
//   IQ4_XS (136 bytes): d (0, u 2), scales_h (2, u 2), scales_l (4, u 1), qs (8, u 4)
//   Q2_K (84 bytes): scales (0, u 4), qs (16, u 4), d (80, u 2), dmin (82, u 2)
//   Q3_K (110 bytes): hmask (0, u 4), qs (32, u 4), scales (96, u 4), d (108, u 2)
// It is a permutation of each panel's bytes. The last n_rows % 16 rows stay as in the file.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"

namespace tzero {

constexpr size_t kRows16 = 16;

// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS.
bool rows16_applies(TensorType t);

// Where byte `o` of a row's bytes (0 <= o < row_bytes) of panel row r lies in its panel.
size_t rows16_offset(TensorType t, size_t r, size_t o);

// The n_rows / 16 whole panels of n_rows rows of type t, row_bytes each, in place.
void to_rows16(TensorType t, uint8_t* rows, size_t n_rows, size_t row_bytes);
// From Rows16 (src, at a panel's first row) back to the file's layout (dst, no overlap): the
// whole panels, then the n_rows % 16 rows after them copied as they are.
void from_rows16(TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes);
// Row r (< 16) of the panel at `panel` in the file's layout (dst, row_bytes).
void from_rows16_row(TensorType t, const uint8_t* panel, size_t r, uint8_t* dst, size_t row_bytes);

}  // namespace tzero
