// IEEE half and bfloat16 conversions, bit exact and independent of the CPU's F16C support.
// Widening (to float) is exact. Narrowing rounds to nearest, ties to even; NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace tzero {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float fp16_to_float_compute(uint16_t h);
uint16_t float_to_fp16(float f);

// Table of all 65536 half values as float, built once (thread-safe static init).
const float* fp16_table();
inline float fp16_to_float(uint16_t h) {
  return fp16_table()[h];
}

inline float bf16_to_float(uint16_t b) {
  return bits_float(uint32_t(b) << 16);
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                         // round to nearest even
  return uint16_t(u >> 16);
}

}  // namespace tzero
