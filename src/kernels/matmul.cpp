#include "kernels/matmul.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/dot.h"

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
      row_bytes_(w.row_bytes) {
  check(file_ != nullptr, std::string("matmul: no kernel for ") + traits(w.type).name);
  if (layout_ == WeightLayout::Blocks8) {
    check(blocks8_applies(type_),
          std::string("matmul: Blocks8 rows of a type without that layout: ") + traits(type_).name);
    blocks8_ = k.gemm_blocks8_for(type_);
  }
}

void MatrixGemm::operator()(const uint8_t* rows, size_t n_rows, const void* x, size_t n_tok,
                            float* y, size_t ldy) const {
  if (layout_ == WeightLayout::File) {
    file_(rows, row_bytes_, x, n_cols_, n_rows, n_tok, y, ldy);
    return;
  }
  if (blocks8_) {
    blocks8_(rows, row_bytes_, x, n_cols_, n_rows, n_tok, y, ldy);
    return;
  }
  gemm_blocks8_unpacked(file_, type_, rows, row_bytes_, x, n_cols_, n_rows, n_tok, y, ldy);
}

void gemm_blocks8_unpacked(GemmFn gemm, TensorType t, const uint8_t* w, size_t row_bytes,
                           const void* x, size_t n_cols, size_t n_rows, size_t n_tok, float* y,
                           size_t ldy) {
  thread_local std::vector<uint8_t> unpacked;  // (chunk, row_bytes) in the file's layout
  const size_t chunk =
      std::max<size_t>(1, MatrixGemm::kUnpackBytes / std::max<size_t>(1, row_bytes));
  unpacked.resize(std::min(chunk, n_rows) * row_bytes);
  for (size_t r = 0; r < n_rows; r += chunk) {
    const size_t nr = std::min(chunk, n_rows - r);
    from_blocks8(t, w + r * row_bytes, unpacked.data(), nr, row_bytes);
    gemm(unpacked.data(), row_bytes, x, n_cols, nr, n_tok, y + r, ldy);
  }
}

void matmul(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x, size_t n_tokens,
            float* y, MatmulScratch& scratch) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const MatrixGemm gemm(k, w);
  const void* xk = quantize_activations(k, w.type, x, n_tokens, K, scratch);
  pool.run(
      N, [&](size_t r0, size_t r1) { gemm(w.row(int64_t(r0)), r1 - r0, xk, n_tokens, y + r0, N); });
}

void matmul(ThreadPool& pool, const Matrix& w, const float* x, size_t n_tokens, float* y,
            MatmulScratch& scratch) {
  matmul(pool, scalar_kernels(), w, x, n_tokens, y, scratch);
}

float matmul_row_ref(const Matrix& w, size_t r, const float* x) {
  ThreadPool one(1);
  MatmulScratch scratch;
  Matrix row = w;
  row.data = w.row(int64_t(r));
  row.n_rows = 1;
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
  from_blocks8(w.type, w.row(int64_t(r)), row.data(), 1, w.row_bytes);
  dequantize_row(w.type, row.data(), dst, size_t(w.n_cols));
}

}  // namespace tzero
