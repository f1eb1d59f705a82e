// Block formats of the supported quantized tensor types, their dequantization, and the
// quantizers used to write models (gen-model) and to quantize activations for matmuls.
//
// Layouts (as the GGUF ecosystem defines them):
//   Q8_0: 32 elements = f16 d, int8 q[32];                 x[i] = d * q[i]
//   Q4_0: 32 elements = f16 d, u8 q[16] (two nibbles each); x[i] = d * ((q[i] & 15) - 8) and
//         x[i + 16] = d * ((q[i] >> 4) - 8) for i < 16
// Activations for quantized matmuls use tzero's own block, ActQ8 (float d, int8 q[32]), so the
// activation scale is not rounded to f16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"

namespace tzero {

constexpr int kQBlock = 32;

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Activations quantized for the 32-element weight types (Q8_0, Q4_0, quant_legacy.h's). Invariant:
// qs in [-127, 127] (the quantizer rounds x * 127 / max|x|; -128 never occurs). The AVX2 kernels
// rely on it (their sign-and-absolute-value trick cannot represent |-128|); custom kernels may too.
struct ActQ8 {
  float d;
  int8_t qs[32];
};

// Dequantizes n elements (a multiple of the block size) of a row of type t to float.
// Widening is exact for F16 and BF16; Q formats compute d * q in float (one rounding).
void dequantize_row(TensorType t, const void* src, float* dst, size_t n);

// Quantizes n floats into a row of type t (F32, F16, BF16, Q8_0, Q4_0, the K-quants of
// quant_k.h and the 32-element types of quant_legacy.h). Q8_0 and Q4_0 follow
// the reference quantizers of the ecosystem: Q8_0 d = max|x| / 127, q = round(x / d);
// Q4_0 d = m / -8 where m is the element of largest magnitude, q = min(15, trunc(x / d + 8.5)).
void quantize_row(TensorType t, const float* src, void* dst, size_t n);

// Whether matmuls with weights of type t take ActQ8 activations: Q8_0, Q4_0 and the 32-element
// types of quant_legacy.h (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4).
bool takes_act_q8(TensorType t);

// Activation quantization, canonical (DETERMINISM.md: per row, depends only on the row):
// per block of 32, amax = max |x|, d = amax / 127, id = d != 0 ? 1 / d : 0,
// q = nearbyint(x * id) (round half to even, as SIMD rounding does).
void quantize_act_q8(const float* x, ActQ8* dst, size_t n);

}  // namespace tzero
