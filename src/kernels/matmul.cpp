#include "kernels/matmul.h"

#include "base/error.h"
#include "kernels/dot.h"

namespace tz {

void matmul(ThreadPool& pool, const Matrix& w, const float* x, size_t n_tokens, float* y,
            MatmulScratch& scratch) {
  const size_t K = size_t(w.n_cols), N = size_t(w.n_rows);
  const bool quantized = w.type == TensorType::Q8_0 || w.type == TensorType::Q4_0;
  const ActQ8* xq = nullptr;
  if (quantized) {
    const size_t blocks = K / kQBlock;
    scratch.act_q8.resize(n_tokens * blocks);
    for (size_t t = 0; t < n_tokens; ++t)
      quantize_act_q8(x + t * K, scratch.act_q8.data() + t * blocks, K);
    xq = scratch.act_q8.data();
  }
  pool.run(N, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const uint8_t* wr = w.row(int64_t(r));
      for (size_t t = 0; t < n_tokens; ++t) {
        float v;
        switch (w.type) {
          case TensorType::F32:
            v = dot_f32_ref(reinterpret_cast<const float*>(wr), x + t * K, K);
            break;
          case TensorType::F16:
            v = dot_f16_ref(reinterpret_cast<const uint16_t*>(wr), x + t * K, K);
            break;
          case TensorType::BF16:
            v = dot_bf16_ref(reinterpret_cast<const uint16_t*>(wr), x + t * K, K);
            break;
          case TensorType::Q8_0:
            v = dot_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(wr), xq + t * (K / kQBlock), K);
            break;
          case TensorType::Q4_0:
            v = dot_q4_0_ref(reinterpret_cast<const BlockQ4_0*>(wr), xq + t * (K / kQBlock), K);
            break;
          default:
            v = 0;  // unreachable: Model rejects unsupported types at load
        }
        y[t * N + r] = v;
      }
    }
  });
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

}  // namespace tz
