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

}  // namespace tzero
