// A view of a weight matrix stored in one of the tensor types, rows contiguous.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"
#include "kernels/weight_layout.h"

namespace tzero {

// n_rows rows, each n_cols elements of `type` (in ggml terms ne0 = n_cols, ne1 = n_rows).
struct Matrix {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  size_t row_bytes = 0;
  WeightLayout layout = WeightLayout::File;  // Blocks8 or Rows16 where the loader repacked them
  // Row r's bytes in the file's layout; in Rows16 (kernels/rows16.h) the address of row r only
  // where r is a multiple of 16 (a panel's first row) or past the last whole panel.
  const uint8_t* row(int64_t r) const { return data + size_t(r) * row_bytes; }
  // Rows [r0, r0 + n) as a matrix of their own (a fused tensor's part: phi3's attn_qkv, ffn_up).
  // r0 a multiple of layout_row_quantum (16 for Rows16), and n too unless the part ends the
  // matrix (the loader lays a fused tensor out as Rows16 only when its parts allow it).
  Matrix rows(int64_t r0, int64_t n) const {
    const int64_t q = int64_t(layout_row_quantum(layout));
    if (r0 % q != 0 || (n % q != 0 && r0 + n != n_rows)) throw_split_panel();
    Matrix m = *this;
    m.data = row(r0);
    m.n_rows = n;
    return m;
  }

 private:
  [[noreturn]] static void throw_split_panel();
};

// The experts of a mixture-of-experts layer: n_expert matrices of the same shape and type, one
// after another (a 3-D GGUF tensor, ne = [n_cols, n_rows, n_expert]). `first` is expert 0.
struct ExpertMatrix {
  Matrix first;
  int64_t n_expert = 0;
  Matrix expert(int64_t e) const {
    Matrix m = first;
    m.data = first.data + size_t(e) * size_t(first.n_rows) * first.row_bytes;
    return m;
  }
};

}  // namespace tzero
