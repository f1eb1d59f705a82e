#include "my_kernels.h"

#include <cmath>

#include "tzero/ops.h"

namespace example {

namespace {
float tree16(float* acc) {
  for (int l = 0; l < 8; ++l) acc[l] += acc[l + 8];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  return acc[0] + acc[1];
}
}  // namespace

void gemm_f32_canonical_x4(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                           size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const float* xf = static_cast<const float*>(x);
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xt = xf + t * n_cols;
    size_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {  // four rows share each activation load
      float acc[4][16] = {};
      for (size_t k = 0; k < n_cols; ++k)
        for (int i = 0; i < 4; ++i) {
          const float* wr = reinterpret_cast<const float*>(w + (r + i) * w_row_bytes);
          acc[i][k % 16] = std::fma(wr[k], xt[k], acc[i][k % 16]);
        }
      for (int i = 0; i < 4; ++i) y[t * ldy + r + i] = tree16(acc[i]);
    }
    for (; r < n_rows; ++r) {
      const float* wr = reinterpret_cast<const float*>(w + r * w_row_bytes);
      float acc[16] = {};
      for (size_t k = 0; k < n_cols; ++k) acc[k % 16] = std::fma(wr[k], xt[k], acc[k % 16]);
      y[t * ldy + r] = tree16(acc);
    }
  }
}

void gemm_f32_sequential(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                         size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  const float* xf = static_cast<const float*>(x);
  for (size_t r = 0; r < n_rows; ++r) {
    const float* wr = reinterpret_cast<const float*>(w + r * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t) {
      float s = 0.0f;
      for (size_t k = 0; k < n_cols; ++k) s = std::fma(wr[k], xf[t * n_cols + k], s);
      y[t * ldy + r] = s;
    }
  }
}

void gemm_f32_batch_dependent(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                              size_t n_rows, size_t n_tok, float* y, size_t ldy) {
  if (n_tok < 4) return gemm_f32_sequential(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
  const float* xf = static_cast<const float*>(x);
  for (size_t r = 0; r < n_rows; ++r) {
    const float* wr = reinterpret_cast<const float*>(w + r * w_row_bytes);
    for (size_t t = 0; t < n_tok; ++t) {
      float acc[8] = {};
      for (size_t k = 0; k < n_cols; ++k)
        acc[k % 8] = std::fma(wr[k], xf[t * n_cols + k], acc[k % 8]);
      float s = 0.0f;
      for (float a : acc) s += a;
      y[t * ldy + r] = s;
    }
  }
}

void register_my_kernels() {
  tzero::register_gemm("matmul.f32", "canonical_x4", &gemm_f32_canonical_x4);
  tzero::register_gemm("matmul.f32", "sequential", &gemm_f32_sequential);
  tzero::register_gemm("matmul.f32", "batch_dependent", &gemm_f32_batch_dependent);
}

}  // namespace example
