#include "kernels/ssm_scan.h"

#include "kernels/dot.h"
#include "kernels/math.h"

namespace tzero {

void ssm_scan_rows(float* S, size_t N, size_t p0, size_t p1, const float* x, const float* B,
                   const float* C, float dt, float dA, float D, float* y, DotF32Fn dot) {
  for (size_t p = p0; p < p1; ++p) {
    float* row = S + p * N;
    const float x_dt = x[p] * dt;
    for (size_t n = 0; n < N; ++n) {
      const float a = row[n] * dA, b = B[n] * x_dt;
      row[n] = a + b;
    }
    const float skip = x[p] * D;
    y[p] = dot(row, C, N) + skip;
  }
}

void ssm_scan_ref(float* S, size_t N, size_t head_dim, const float* x, const float* B,
                  const float* C, float dt_raw, float dt_bias, float A, float D, float* y) {
  const float dt = softplus_ref(dt_raw + dt_bias);
  const float dA = exp_ref(dt * A);
  ssm_scan_rows(S, N, 0, head_dim, x, B, C, dt, dA, D, y, dot_f32_ref);
}

}  // namespace tzero
