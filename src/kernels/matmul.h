// Matrix products of a weight matrix with a batch of activation rows, threaded over weight rows.
// Each output element is one dot product in the canonical order of dot.h, computed by exactly
// one thread, so the result does not depend on the thread count or on the batch size.
#pragma once

#include <cstddef>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matrix.h"
#include "kernels/quant.h"

namespace tzero {

// Reusable buffers for activation quantization.
struct MatmulScratch {
  std::vector<ActQ8> act_q8;
  std::vector<ActQ8K> act_q8k;
};

// The gemm of k for w's type and layout, called on a run of w's rows (matmul, matmul_fast and
// matmul_experts): gemm_for's kernel on rows in the file's layout; on Blocks8 or Rows16 rows
// (kernels/weight_layout.h, kernels/rows16.h) the set's kernel for that layout, or where it has
// none gemm_for's kernel on the rows unpacked to the file's layout (a thread-local copy of at
// most kUnpackBytes at a time). Each row's dot products are its own, so the bits are the same
// either way. Throws when k has no kernel for the type.
class MatrixGemm {
 public:
  static constexpr size_t kUnpackBytes = 256 << 10;
  // w: the matrix (or an ExpertMatrix's first expert: the experts' rows follow one another).
  MatrixGemm(const KernelSet& k, const Matrix& w);
  // A run's first row, and its end unless it is the matrix's end, must be multiples of this
  // (16 for Rows16, else 1).
  size_t row_quantum() const { return quantum_; }
  // y[t * ldy + i] for rows[i * w.row_bytes], i < n_rows, t < n_tok (activations x as gemm_for's).
  void operator()(const uint8_t* rows, size_t n_rows, const void* x, size_t n_tok, float* y,
                  size_t ldy) const;

 private:
  GemmFn file_ = nullptr, layout_gemm_ = nullptr;
  TensorType type_;
  WeightLayout layout_;
  size_t n_cols_, row_bytes_, n_rows_, quantum_;
  const uint8_t* base_;  // row 0 of w (of expert 0)
};

// gemm (a kernel over rows in the file's layout) over n_rows rows of type t in layout l: the
// rows unpacked a few at a time (at most MatrixGemm::kUnpackBytes, whole Rows16 panels) into a
// thread-local copy.
void gemm_unpacked(GemmFn gemm, WeightLayout l, TensorType t, const uint8_t* w, size_t row_bytes,
                   const void* x, size_t n_cols, size_t n_rows, size_t n_tok, float* y, size_t ldy);

// y (n_tokens, w.n_rows) = x (n_tokens, w.n_cols) times w transposed, with kernel set k.
void matmul(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x, size_t n_tokens,
            float* y, MatmulScratch& scratch);
// `--mode fast`: the same products, with row chunks claimed dynamically by the threads
// (kernels/matmul_fast.cpp). Whole rows: the bits of matmul() above (MatmulFast.*).
void matmul_fast(ThreadPool& pool, const KernelSet& k, const Matrix& w, const float* x,
                 size_t n_tokens, float* y, MatmulScratch& scratch);

// The activations as the weight type's kernels take them: x itself for float weights, ActQ8 or
// ActQ8K rows (in scratch) for quantized ones.
const void* quantize_activations(const KernelSet& k, TensorType weight_type, const float* x,
                                 size_t n_tokens, size_t K, MatmulScratch& scratch);

// The same with the scalar reference kernels.
void matmul(ThreadPool& pool, const Matrix& w, const float* x, size_t n_tokens, float* y,
            MatmulScratch& scratch);

// One dot product of weight row r with x, in the canonical order (for tests and tools).
float matmul_row_ref(const Matrix& w, size_t r, const float* x);

// Copies row `r` of w into dst as float (embedding lookup).
void matrix_row_to_float(const Matrix& w, size_t r, float* dst);
// Copies row `r` of w into dst (w.row_bytes) in the file's layout, whatever w's.
void matrix_row_bytes(const Matrix& w, size_t r, uint8_t* dst);

}  // namespace tzero
