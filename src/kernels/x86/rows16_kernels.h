// The avx512 set's kernels over Q4_K, Q5_K, Q6_K and IQ4_XS rows in the Rows16 layout
// (kernels/rows16.h), by name, for its test and tz_bench_decode --layout rows16 (sessions reach
// them as KernelSet::rows16_q4_k, rows16_q5_k, rows16_q6_k, rows16_iq4_xs); only where the CPU runs
// the avx512 set (AVX-512 F/BW/VL/DQ and VNNI).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tzero::x86 {

// y[t * ldy + r] for r < n_rows (a multiple of 16, w at a panel's first row), t < n_tok; x: n_tok
// rows of n_cols / 256 ActQ8K blocks (quantize_activations for Q4_K).
void gemm_q4_k_rows16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                             size_t n_rows, size_t n_tok, float* y, size_t ldy);
void gemm_q5_k_rows16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                             size_t n_rows, size_t n_tok, float* y, size_t ldy);
void gemm_q6_k_rows16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                             size_t n_rows, size_t n_tok, float* y, size_t ldy);
void gemm_iq4_xs_rows16_avx512(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                               size_t n_rows, size_t n_tok, float* y, size_t ldy);

}  // namespace tzero::x86
