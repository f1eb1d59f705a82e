#include "base/fp16.h"

#include <vector>

namespace tzero {

float fp16_to_float_compute(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, nan
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);  // signed zero
    // Subnormal: normalize.
    int e = -1;
    do {
      mantissa <<= 1;
      ++e;
    } while ((mantissa & 0x400u) == 0);
    mantissa &= 0x3ffu;
    return bits_float(sign | uint32_t(127 - 15 - e) << 23 | (mantissa << 13));
  }
  return bits_float(sign | (exponent + 127 - 15) << 23 | (mantissa << 13));
}

uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // nan
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow (>= 65520) to inf
  if (abs < 0x38800000u) {                                  // below the smallest normal half
    if (abs < 0x33000000u) return sign;                     // rounds to zero (< 2^-25)
    // Subnormal half: value = m * 2^-24. Round the float's 24-bit significand.
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e): places the result in units of 2^-24
    const uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return uint16_t(sign | r);
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits (nearest even); carry may bump
  // the exponent, which is the right result (and may give inf, handled by the bound above).
  uint32_t r = abs - ((127u - 15u) << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = fp16_to_float_compute(uint16_t(i));
    return t;
  }();
  return table.data();
}

}  // namespace tzero
