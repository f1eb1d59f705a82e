#include "kernels/matmul.h"

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

void matmul(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x, size_t n_tokens,
            float* y, MatmulScratch& scratch) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const GemmFn gemm = k.gemm_for(w.type);
  check(gemm != nullptr, std::string("matmul: no kernel for ") + traits(w.type).name);
  const void* xk = quantize_activations(k, w.type, x, n_tokens, K, scratch);
  pool.run(N, [&](size_t r0, size_t r1) {
    gemm(w.row(int64_t(r0)), w.row_bytes, xk, K, r1 - r0, n_tokens, y + r0, N);
  });
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
  dequantize_row(w.type, w.row(int64_t(r)), dst, size_t(w.n_cols));
}

}  // namespace tzero
