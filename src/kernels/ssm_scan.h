// Mamba-2's selective scan (nemotron_h's recurrent layers) as a scalar reference with its
// canonical order (version "mamba2-v1"; every variant must return these bits exactly).
//
// Head h of H reads group g = h / (H / groups) of B and C (contiguous blocks, as llama.cpp's
// ssm_scan). For each token, in order, of each sequence:
//   dt = softplus_ref(dt_raw_h + dt_bias_h)      dA = exp_ref(dt * A_h)   (A = -exp(A_log))
//   for each row p of the head's state (head_dim rows of N floats), independently:
//     x_dt = x_p * dt
//     S_p[n] = S_p[n] * dA + B[n] * x_dt         (both products rounded, then the sum)
//     y_p = dot-v1(S_p, C) + x_p * D_h            (16 lanes; the product rounded, then the sum)
// The state after a token depends on the state before it and the token only, so prefill in any
// chunking equals token-by-token decode, and the rows may be split over threads freely.
#pragma once

#include <cstddef>

#include "kernels/delta_net.h"  // DotF32Fn

namespace tzero {

// Rows [p0, p1) of one head for one token: S (head_dim, N) the state, updated; x (head_dim)
// the head's inputs; B, C (N) its group's; dt and dA as above; y[p] for p in [p0, p1).
void ssm_scan_rows(float* S, size_t N, size_t p0, size_t p1, const float* x, const float* B,
                   const float* C, float dt, float dA, float D, float* y, DotF32Fn dot);

// One token of one head, every row, with dot_f32_ref; dt_raw before softplus.
void ssm_scan_ref(float* S, size_t N, size_t head_dim, const float* x, const float* B,
                  const float* C, float dt_raw, float dt_bias, float A, float D, float* y);

}  // namespace tzero
