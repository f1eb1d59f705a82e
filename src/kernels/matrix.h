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
  WeightLayout layout = WeightLayout::File;  // Blocks8 where the loader repacked the rows
  const uint8_t* row(int64_t r) const { return data + size_t(r) * row_bytes; }
  // Rows [r0, r0 + n) as a matrix of their own (a fused tensor's part: phi3's attn_qkv, ffn_up).
  Matrix rows(int64_t r0, int64_t n) const {
    Matrix m = *this;
    m.data = row(r0);
    m.n_rows = n;
    return m;
  }
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
