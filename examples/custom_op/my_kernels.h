// Three custom f32 matmul kernels, to show what tzero::check_op says about each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace example {

// The canonical order (16 lanes, fma, then the 8-4-2-1 tree), written out by hand with four
// rows at a time: a faster shape of the same function. Verdict: identical to the reference.
void gemm_f32_canonical_x4(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                           size_t n_rows, size_t n_tok, float* y, size_t ldy);

// A plain sequential dot product per element. Always the same bits, but not tzero's order.
// Verdict: bit-stable but different.
void gemm_f32_sequential(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                         size_t n_rows, size_t n_tok, float* y, size_t ldy);

// A "batched fast path" like many engines have: with 4 or more tokens it switches to 8 lanes,
// so a request's bits depend on what else shares its batch. Verdict: unstable (batch mates).
void gemm_f32_batch_dependent(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols,
                              size_t n_rows, size_t n_tok, float* y, size_t ldy);

// Registers the three under matmul.f32 as "canonical_x4", "sequential", "batch_dependent".
void register_my_kernels();

}  // namespace example
