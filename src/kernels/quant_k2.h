// More super-block weight formats (256 elements), as the GGUF ecosystem defines them: IQ4_XS,
// Q3_K and Q2_K. Their dot products take ActQ8K activations (quant_k.h).
//
//   IQ4_XS (136 bytes): f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]. Sub-block j (elements
//     32j .. 32j+31) has x = d * (ls[j] - 32) * kIQ4NLValues[q], the 6-bit ls[j] = ((scales_l[j/2]
//     >> 4*(j%2)) & 15) | ((scales_h >> 2j) & 3) << 4. Element 32j + l takes q from the low
//     nibble of qs[16j + l] for l < 16, from the high nibble of qs[16j + l - 16] otherwise.
//   Q3_K (110 bytes): u8 hmask[32], u8 qs[64], u8 scales[12], f16 d. Sub-block i (elements
//     16i .. 16i+15) has x = d * (sc[i] - 32) * (q2 - (hbit ? 0 : 4)): in half h (elements
//     128h .. 128h+127), with g < 4 and l < 32, element e = 128h + 32g + l has q2 = bits 2g,
//     2g+1 of qs[32h + l] and hbit = bit 4h + g (= e / 32) of hmask[l]. The 6-bit sc[i]: its low
//     4 bits are the low nibble of scales[i] (i < 8) or the high nibble of scales[i-8] (i >= 8),
//     its high 2 bits are bits 2*(i/4), 2*(i/4)+1 of scales[8 + i%4].
//   Q2_K (84 bytes): u8 scales[16], u8 qs[64], f16 d, f16 dmin. Sub-block i (elements 16i ..
//     16i+15) has x = d * (scales[i] & 15) * q - dmin * (scales[i] >> 4), q in [0, 3] taken as
//     Q3_K's q2 (bits 2g, 2g+1 of qs[32h + l] for element 128h + 32g + l).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tzero {

// The 16 non-linear levels of IQ4_NL and IQ4_XS (a nibble indexes them).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// The integer weights of a block, element by element: IQ4_XS kIQ4NLValues[q] (-127..113),
// Q3_K q2 - (hbit ? 0 : 4) (-4..3), Q2_K q (0..3).
void iq4_xs_unpack(const BlockIQ4_XS& b, int8_t* w);
void q3_k_unpack(const BlockQ3_K& b, int8_t* w);
void q2_k_unpack(const BlockQ2_K& b, uint8_t* q);
// The signed sub-block scales: IQ4_XS ls[j] - 32 (8 of them), Q3_K sc[i] - 32 (16), both in
// [-32, 31]. (Q2_K's scales and mins are its bytes' nibbles.)
void iq4_xs_scales(const BlockIQ4_XS& b, int* sc);
void q3_k_scales(const BlockQ3_K& b, int* sc);

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n);
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n);
// Simple, deterministic quantizers (for gen-model), not llama.cpp's searches: per sub-block the
// element of largest magnitude fixes a scale (IQ4_XS: it maps to -127, Q3_K: to -4; Q2_K a range
// fit [min(0, min x), max x] over 3 steps), the scales are rounded to the super-block's 6 or 4
// bits, and each element takes the nearest level.
void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n);
void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n);
void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n);

}  // namespace tzero
