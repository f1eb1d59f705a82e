#include "kernels/matmul.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/dot.h"
#include "kernels/rows16.h"

namespace tzero {

const void* quantize_activations(const KernelSet& k, TensorType weight_type, const float* x,
                                 size_t n_tokens, size_t K, MatmulScratch& scratch) {
  if (takes_act_q8(weight_type)) {
    const size_t blocks = K / kQBlock;
    scratch.act_q8.resize(n_tokens * blocks);
    for (size_t t = 0; t < n_tokens; ++t)
      k.quantize_act_q8(x + t * K, scratch.act_q8.data() + t * blocks, K);
    return scratch.act_q8.data();
  }
  if (weight_type == TensorType::Q4_K || weight_type == TensorType::Q5_K ||
      weight_type == TensorType::Q6_K || weight_type == TensorType::IQ4_XS ||
      weight_type == TensorType::Q3_K || weight_type == TensorType::Q2_K) {
    const size_t blocks = K / kSuperBlock;
    scratch.act_q8k.resize(n_tokens * blocks);
    for (size_t t = 0; t < n_tokens; ++t)
      k.quantize_act_q8k(x + t * K, scratch.act_q8k.data() + t * blocks, K);
    return scratch.act_q8k.data();
  }
  return x;
}

MatrixGemm::MatrixGemm(const KernelSet& k, const Matrix& w)
    : file_(k.gemm_for(w.type)),
      type_(w.type),
      layout_(w.layout),
      n_cols_(size_t(w.n_cols)),
      row_bytes_(w.row_bytes),
      n_rows_(size_t(w.n_rows)),
      quantum_(layout_row_quantum(w.layout)),
      base_(w.data) {
  check(file_ != nullptr, std::string("matmul: no kernel for ") + traits(w.type).name);
  if (layout_ == WeightLayout::Blocks8) {
    check(blocks8_applies(type_),
          std::string("matmul: Blocks8 rows of a type without that layout: ") + traits(type_).name);
    layout_gemm_ = k.gemm_blocks8_for(type_);
  } else if (layout_ == WeightLayout::Rows16) {
    check(rows16_applies(type_),
          std::string("matmul: Rows16 rows of a type without that layout: ") + traits(type_).name);
    layout_gemm_ = k.gemm_rows16_for(type_);
  }
}

void MatrixGemm::operator()(const uint8_t* rows, size_t n_rows, const void* x, size_t n_tok,
                            float* y, size_t ldy) const {
  if (layout_ == WeightLayout::File) {
    file_(rows, row_bytes_, x, n_cols_, n_rows, n_tok, y, ldy);
    return;
  }
  size_t packed = n_rows;  // the rows in the layout; the rest (a Rows16 tail) in the file's
  if (layout_ == WeightLayout::Rows16) {
    // The row within its matrix (an expert's rows follow the previous expert's).
    const size_t r0 = size_t(rows - base_) / row_bytes_ % n_rows_;
    const size_t whole = n_rows_ / kRows16 * kRows16;
    check(r0 % kRows16 == 0 && (r0 + n_rows == n_rows_ || n_rows % kRows16 == 0),
          "internal: Rows16 rows handed over off their panels");
    packed = r0 >= whole ? 0 : std::min(n_rows, whole - r0);
  }
  if (packed > 0) {
    if (layout_gemm_)
      layout_gemm_(rows, row_bytes_, x, n_cols_, packed, n_tok, y, ldy);
    else
      gemm_unpacked(file_, layout_, type_, rows, row_bytes_, x, n_cols_, packed, n_tok, y, ldy);
  }
  if (packed < n_rows)
    file_(rows + packed * row_bytes_, row_bytes_, x, n_cols_, n_rows - packed, n_tok, y + packed,
          ldy);
}

void gemm_unpacked(GemmFn gemm, WeightLayout l, TensorType t, const uint8_t* w, size_t row_bytes,
                   const void* x, size_t n_cols, size_t n_rows, size_t n_tok, float* y,
                   size_t ldy) {
  thread_local std::vector<uint8_t> unpacked;  // (chunk, row_bytes) in the file's layout
  const size_t q = layout_row_quantum(l);
  const size_t chunk =
      std::max<size_t>(1, MatrixGemm::kUnpackBytes / std::max<size_t>(1, row_bytes * q)) * q;
  unpacked.resize(std::min(chunk, n_rows) * row_bytes);
  for (size_t r = 0; r < n_rows; r += chunk) {
    const size_t nr = std::min(chunk, n_rows - r);
    unpack_rows(l, t, w + r * row_bytes, unpacked.data(), nr, row_bytes);
    gemm(unpacked.data(), row_bytes, x, n_cols, nr, n_tok, y + r, ldy);
  }
}

void matmul(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x, size_t n_tokens,
            float* y, MatmulScratch& scratch) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const MatrixGemm gemm(k, w);
  const void* xk = quantize_activations(k, w.type, x, n_tokens, K, scratch);
  // Split in whole quanta of rows (Rows16 panels); which thread computes a row never changes it.
  const size_t q = gemm.row_quantum();
  pool.run((N + q - 1) / q, [&](size_t u0, size_t u1) {
    const size_t r0 = u0 * q, r1 = std::min(N, u1 * q);
    gemm(w.row(int64_t(r0)), r1 - r0, xk, n_tokens, y + r0, N);
  });
}

void matmul(ThreadPool& pool, const Matrix& w, const float* x, size_t n_tokens, float* y,
            MatmulScratch& scratch) {
  matmul(pool, scalar_kernels(), w, x, n_tokens, y, scratch);
}

void matrix_row_bytes(const Matrix& w, size_t r, uint8_t* dst) {
  if (w.layout == WeightLayout::Rows16 && r < size_t(w.n_rows) / kRows16 * kRows16)
    from_rows16_row(w.type, w.row(int64_t(r / kRows16 * kRows16)), r % kRows16, dst, w.row_bytes);
  else  // a row of its own (a Rows16 matrix's tail: a run of one row past its panels)
    unpack_rows(w.layout, w.type, w.row(int64_t(r)), dst, 1, w.row_bytes);
}

float matmul_row_ref(const Matrix& w, size_t r, const float* x) {
  ThreadPool one(1);
  MatmulScratch scratch;
  std::vector<uint8_t> bytes(w.row_bytes);
  matrix_row_bytes(w, r, bytes.data());
  Matrix row = w;
  row.data = bytes.data();
  row.n_rows = 1;
  row.layout = WeightLayout::File;
  float y;
  matmul(one, row, x, 1, &y, scratch);
  return y;
}

void matrix_row_to_float(const Matrix& w, size_t r, float* dst) {
  if (w.layout == WeightLayout::File) {
    dequantize_row(w.type, w.row(int64_t(r)), dst, size_t(w.n_cols));
    return;
  }
  thread_local std::vector<uint8_t> row;
  row.resize(w.row_bytes);
  matrix_row_bytes(w, r, row.data());
  dequantize_row(w.type, row.data(), dst, size_t(w.n_cols));
}

}  // namespace tzero
