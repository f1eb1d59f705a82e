// The other 32-element block types of the GGUF ecosystem (ggml's layouts): Q4_1, Q5_0, Q5_1,
// IQ4_NL and MXFP4, with their dequantization, reference quantizers (for gen-model) and the
// exact integer weights every dot product kernel works from.
//
// Layouts (element i < 16 in the low nibble of qs[i], element i + 16 in its high nibble, as Q4_0):
//   Q4_1:   f16 d, f16 m, u8 qs[16];           x = d * q + m,            q in [0, 15]
//   Q5_0:   f16 d, u8 qh[4], u8 qs[16];        x = d * (q - 16),         q in [0, 31]
//   Q5_1:   f16 d, f16 m, u8 qh[4], u8 qs[16]; x = d * q + m,            q in [0, 31]
//           (Q5_0, Q5_1: bit 4 of element i's q is bit i of qh read as a little-endian uint32)
//   IQ4_NL: f16 d, u8 qs[16];                  x = d * kIq4nlValues[q],  q in [0, 15]
//   MXFP4:  u8 e (E8M0), u8 qs[16];            x = kMxfp4Values[q] * 2^(e - 128)
//           (kMxfp4Values are twice the FP4 E2M1 values, so 2^(e - 128) is half the block's
//           E8M0 scale 2^(e - 127): exact for every e in [0, 255], ggml's E8M0_TO_FP32_HALF)
// Dequantization computes d * w in float (one rounding); Q4_1 and Q5_1 then add m (a second).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace tzero {

struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[16];
};
static_assert(sizeof(BlockMXFP4) == 17);

// ggml's kvalues_iq4nl and kvalues_mxfp4 (the values, not their code).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as a float, exact (e = 0 and 1 give the subnormals 2^-128 and 2^-127): for
// e >= 2 the exponent field e - 1, below it the subnormal bit patterns 2^21 and 2^22.
inline float e8m0_half_to_float(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23);
}

// The 32 integer weights of a block, in element order: Q4_1 and Q5_1 their unsigned q, Q5_0
// q - 16, IQ4_NL and MXFP4 their table values. Every dot kernel's block sums are sums of these
// times the activation quants.
void block_ints(const BlockQ4_1& b, int8_t* w);
void block_ints(const BlockQ5_0& b, int8_t* w);
void block_ints(const BlockQ5_1& b, int8_t* w);
void block_ints(const BlockIQ4_NL& b, int8_t* w);
void block_ints(const BlockMXFP4& b, int8_t* w);

// n elements (a multiple of 32).
void dequantize_row_q4_1(const BlockQ4_1* b, float* dst, size_t n);
void dequantize_row_q5_0(const BlockQ5_0* b, float* dst, size_t n);
void dequantize_row_q5_1(const BlockQ5_1* b, float* dst, size_t n);
void dequantize_row_iq4_nl(const BlockIQ4_NL* b, float* dst, size_t n);
void dequantize_row_mxfp4(const BlockMXFP4* b, float* dst, size_t n);

// Reference quantizers, deterministic (plain float arithmetic, fixed tie rules):
//   Q4_1 / Q5_1: lo = min x, hi = max x, d = (hi - lo) / (15 | 31), m = lo,
//                q = min(15 | 31, trunc((x - lo) / d + 0.5)) (q = 0 where d = 0).
//   Q5_0: as Q4_0 with 32 levels: d = v / -16 where v is the element of largest magnitude,
//         q = min(31, trunc(x / d + 16.5)).
//   IQ4_NL: d = v / -127 (v as Q5_0's), q = the index of the table value nearest x / d (the
//           lower index on a tie); q = index of 1 where d = 0.
//   MXFP4: e = clamp(floor(log2(max |x|)) - 2 + 127, 0, 255) (0 where max |x| = 0), q = the
//          index of the table value nearest x / 2^(e - 128) (the lower index on a tie).
void quantize_row_q4_1(const float* x, BlockQ4_1* b, size_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* b, size_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* b, size_t n);
void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* b, size_t n);
void quantize_row_mxfp4(const float* x, BlockMXFP4* b, size_t n);

}  // namespace tzero
