#include "kernels/math.h"

#include <cmath>
#include <cstdint>

#include "base/fp16.h"

namespace tzero {

float exp_ref(float x) {
  if (std::isnan(x)) return x;
  if (x > 88.72283f) return INFINITY;
  if (x < -87.33654f) return 0.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;         // high bits of ln 2 (exact product)
  constexpr float kLn2Lo = 1.428606765330187045e-06f;  // ln 2 - kLn2Hi
  const float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = 1.0f / 5040.0f;
  p = std::fma(p, r, 1.0f / 720.0f);
  p = std::fma(p, r, 1.0f / 120.0f);
  p = std::fma(p, r, 1.0f / 24.0f);
  p = std::fma(p, r, 1.0f / 6.0f);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  // n is in [-126, 128]; split 2^n into two factors so neither overflows the exponent range.
  const int ni = int(n);
  const int n1 = ni / 2, n2 = ni - n1;
  const float s1 = bits_float(uint32_t(n1 + 127) << 23);
  const float s2 = bits_float(uint32_t(n2 + 127) << 23);
  return (p * s1) * s2;
}

float log_ref(float x) {
  if (std::isnan(x) || x < 0.0f) return NAN;
  if (x == 0.0f) return -INFINITY;
  if (std::isinf(x)) return x;
  int e = 0;
  if (x < 1.17549435e-38f) x *= 16777216.0f, e = -24;  // subnormal: scale into the normal range
  const uint32_t bits = float_bits(x);
  e += int((bits >> 23) & 0xff) - 127;
  float m = bits_float((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356f) m *= 0.5f, ++e;                       // exact
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float p = 1.0f / 11.0f;
  p = p * s2 + 1.0f / 9.0f;
  p = p * s2 + 1.0f / 7.0f;
  p = p * s2 + 1.0f / 5.0f;
  p = p * s2 + 1.0f / 3.0f;
  p = p * s2 + 1.0f;
  const float lnm = 2.0f * (s * p);
  constexpr float kLn2Hi = 0.693145751953125f;
  constexpr float kLn2Lo = 1.428606765330187045e-06f;
  const float fe = float(e);
  return fe * kLn2Hi + (fe * kLn2Lo + lnm);
}

}  // namespace tzero
