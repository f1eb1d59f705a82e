// K-quant block formats (super-blocks of 256 elements), as the GGUF ecosystem defines them,
// and tzero's activation block for them.
//
//   Q4_K (144 bytes): f16 d, f16 dmin, u8 scales[12] (eight 6-bit scales sc[j] and mins m[j]),
//     u8 qs[128]. Sub-block j (elements 32j .. 32j+31) has x = d*sc[j]*q - dmin*m[j], q in
//     [0, 15]: element e of 64-element chunk c = e / 64 is the low nibble of qs[32c + e%64]
//     when e%64 < 32, else the high nibble of qs[32c + e%64 - 32].
//     Scale packing: for j < 4, sc[j] = scales[j] & 63, m[j] = scales[j+4] & 63; for j >= 4,
//     sc[j] = (scales[j+4] & 15) | (scales[j-4] >> 6) << 4, m[j] = (scales[j+4] >> 4) |
//     (scales[j] >> 6) << 4.
//   Q5_K (176 bytes): f16 d, f16 dmin, u8 scales[12] (packed as Q4_K's), u8 qh[32], u8 qs[128].
//     Q4_K's layout with a fifth bit: q in [0, 31] is the Q4_K nibble plus 16 * a bit of qh:
//     for element e of chunk c with l = e%64 mod 32, bit 2c of qh[l] (the low-nibble half,
//     e%64 < 32) or bit 2c+1 (the high-nibble half).
//   Q6_K (210 bytes): u8 ql[128], u8 qh[64], i8 scales[16], f16 d. Sub-block i (elements
//     16i .. 16i+15) has x = d*scales[i]*(q - 32), q in [0, 63]. In half h (elements
//     128h .. 128h+127) with l < 32 and g < 4, element 128h + 32g + l takes its low 4 bits from
//     ql[64h + l + 32*(g&1)] (low nibble for g < 2, high nibble for g >= 2) and its high 2 bits
//     from bits 2g, 2g+1 of qh[32h + l].
//   ActQ8K (tzero's own): float d, int8 q[256], int16 bsums[16] (sums of 16 consecutive q).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tzero {

constexpr int kSuperBlock = 256;

struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

struct ActQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

// Unpacks the scale and min of sub-block j (0..7) of a Q4_K block.
void q4_k_scale_min(const uint8_t* scales, int j, int* sc, int* m);
// Unpacks the 256 quants of a block: Q4_K to [0, 15], Q5_K to [0, 31], Q6_K to [0, 63] (before
// the -32). Q5_K's scales and mins unpack as Q4_K's (q4_k_scale_min).
void q4_k_unpack(const BlockQ4_K& b, uint8_t* q);
void q5_k_unpack(const BlockQ5_K& b, uint8_t* q);
void q6_k_unpack(const BlockQ6_K& b, uint8_t* q);

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n);
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n);
// Simple, valid quantizers (for gen-model): per sub-block range fits, scales to 6 / 8 bits.
void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n);

// Activation quantization for K-quant matmuls (canonical, per row): per 256 block,
// d = max|x| / 127, q = nearbyint(x * (1/d)) (0 when d == 0), bsums = exact int sums.
void quantize_act_q8k(const float* x, ActQ8K* dst, size_t n);

}  // namespace tzero
