// How a weight matrix's rows lie in memory. A GGUF file stores each row as its blocks one after
// another; the Blocks8 layout stores each run of 8 consecutive blocks of a row field by field
// (the 8 scales, then the 8 mins or high bits where the type has them, then the 8 blocks'
// quants), so a decode kernel loads a group's scales and quants with a few wide loads instead
// of gathering them block by block (docs/BENCHMARKS.md, "Blocks8"). It is a permutation of
// bytes inside each row: the same bytes per row, the same values, the same canonical order of
// every dot product, so the bits of every product are those of the file's layout.
//
// Blocks8 group of 8 blocks of a type whose block has fields f (offset o_f, size s_f) in order:
//   byte i of field f of block j (0..7) is at 8 * o_f + j * s_f + i
// e.g. Q4_0 (d: 2 bytes, qs: 16): [d0 .. d7: 16 bytes][qs of block 0 .. 7: 128 bytes]. The last
// n_blocks % 8 blocks of a row stay as in the file.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"

namespace tzero {

enum class WeightLayout : uint8_t {
  File,     // as in the GGUF file
  Blocks8,  // groups of 8 blocks field by field (above); only where blocks8_applies(type)
  Rows16,   // 16 rows interleaved block by block (kernels/rows16.h); only where rows16_applies
};

// Rows16 permutes bytes across the 16 rows of a panel: a run of a matrix's rows handed to a
// kernel, or unpacked, must start at a multiple of this many rows (its end: another multiple, or
// the matrix's end). 1 for the other layouts.
size_t layout_row_quantum(WeightLayout l);

// n_rows rows of row_bytes each from layout l to the file's layout (dst, no overlap). Rows16:
// src at a panel's first row; rows past the matrix's last whole panel are in the file's layout,
// so a run that ends inside a panel must be the matrix's end (its tail).
void unpack_rows(WeightLayout l, TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows,
                 size_t row_bytes);

// The 32-element block types: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4.
bool blocks8_applies(TensorType t);

// n_rows rows of row_bytes each, from the file's layout to Blocks8, in place.
void to_blocks8(TensorType t, uint8_t* rows, size_t n_rows, size_t row_bytes);
// n_rows rows of row_bytes each, from Blocks8 (src) to the file's layout (dst; no overlap).
void from_blocks8(TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes);

}  // namespace tzero
