// IEEE half and bfloat16 conversions (src/base/fp16.h) against independent computations.
//
// Widening is checked exhaustively against the IEEE formula evaluated in double; narrowing is
// checked against a nearest-value search over the ordered list of representable values with
// ties broken to the even bit pattern, which is the IEEE round-to-nearest-even definition and
// shares no code with the bit-twiddling in fp16.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/fp16.h"
#include "base/rng.h"

namespace tzero {
namespace {

bool half_is_nan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}
bool bf16_is_nan(uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

// The value of a half from the IEEE 754 binary16 definition, in double (exact).
double half_value(uint16_t h) {
  const int sign = (h >> 15) & 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f)
    v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (e == 0)
    v = std::ldexp(double(m), -24);  // subnormal: m * 2^-24
  else
    v = std::ldexp(1.0 + double(m) / 1024.0, e - 15);
  return sign ? -v : v;
}

// Independent round-to-nearest-even float -> half. For |f| finite: find the two consecutive
// finite halves lo <= |f| < hi (hi = 65536 stands for the "next" value after 65504, which IEEE
// uses to decide overflow: |f| >= 65520 rounds to inf), pick the nearer, on a tie the one whose
// bit pattern is even. Distances are exact in double for |f| < 2^17.
uint16_t half_rne_oracle(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (std::isnan(f)) return 0x7e00;  // any NaN: callers only check NaN-ness
  if (a >= 65536.0) return sign | 0x7c00;
  // Binary search for the largest positive finite half pattern with value <= a.
  uint16_t lo = 0, hi_pat = 0x7bff;
  while (lo < hi_pat) {
    const uint16_t mid = uint16_t((lo + hi_pat + 1) / 2);
    if (half_value(mid) <= a)
      lo = mid;
    else
      hi_pat = uint16_t(mid - 1);
  }
  const uint16_t up = uint16_t(lo + 1);  // 0x7c00 when lo is 65504
  const double vlo = half_value(lo), vup = up == 0x7c00 ? 65536.0 : half_value(up);
  const double dlo = a - vlo, dup = vup - a;
  uint16_t r;
  if (dlo < dup)
    r = lo;
  else if (dup < dlo)
    r = up;
  else
    r = (lo & 1) ? up : lo;
  return sign | r;
}

// Independent round-to-nearest-even float -> bf16: the candidates are the truncation and the
// next bf16 magnitude (0x7f80 = inf counts as 2^128 for the overflow decision).
uint16_t bf16_rne_oracle(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs == 0x7f800000u) return sign | 0x7f80;
  const uint16_t lo = uint16_t(abs >> 16), up = uint16_t(lo + 1);
  const double a = double(from_bits(abs));
  const double vlo = double(from_bits(uint32_t(lo) << 16));
  const double vup = up == 0x7f80 ? std::ldexp(1.0, 128) : double(from_bits(uint32_t(up) << 16));
  const double dlo = a - vlo, dup = vup - a;
  uint16_t r;
  if (dlo < dup)
    r = lo;
  else if (dup < dlo)
    r = up;
  else
    r = (lo & 1) ? up : lo;
  return sign | r;
}

void expect_half(float f, uint16_t want) {
  EXPECT_EQ(float_to_fp16(f), want)
      << "f=" << f << " bits=0x" << std::hex << std::bit_cast<uint32_t>(f);
}

// Proves: widening is exact (equals the IEEE formula) for all 65536 halves, and widening then
// narrowing gives back the same bits for every non-NaN half; NaNs stay NaN with their sign.
TEST(Fp16, ExhaustiveRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = uint16_t(i);
    const float f = fp16_to_float_compute(h);
    const double want = half_value(h);
    if (half_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << "h=0x" << std::hex << i;
      const uint16_t back = float_to_fp16(f);
      ASSERT_TRUE(half_is_nan(back)) << "h=0x" << std::hex << i;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << "NaN sign lost, h=0x" << std::hex << i;
      continue;
    }
    ASSERT_EQ(double(f), want) << "h=0x" << std::hex << i;
    ASSERT_EQ(std::signbit(f), bool(h & 0x8000u)) << "h=0x" << std::hex << i;
    ASSERT_EQ(float_to_fp16(f), h) << "h=0x" << std::hex << i;
  }
}

// Proves: the lookup table used by every kernel holds exactly the computed widening (bits,
// NaN payloads included) for all 65536 halves.
TEST(Fp16, TableMatchesCompute) {
  const float* t = fp16_table();
  for (uint32_t i = 0; i < 65536; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(t[i]),
              std::bit_cast<uint32_t>(fp16_to_float_compute(uint16_t(i))))
        << "h=0x" << std::hex << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(fp16_to_float(uint16_t(i))), std::bit_cast<uint32_t>(t[i]));
  }
}

// Proves: narrowing rounds to nearest, ties to even, at hand-computed points: ties in the
// normal range, the subnormal boundaries, the smallest subnormal, overflow at 65520.
TEST(Fp16, NarrowingKnownValues) {
  expect_half(0.0f, 0x0000);
  expect_half(-0.0f, 0x8000);
  expect_half(1.0f, 0x3c00);
  expect_half(1.0f + 0x1p-11f, 0x3c00);      // tie between 1 and 1+2^-10: even is 1
  expect_half(1.0f + 3 * 0x1p-11f, 0x3c02);  // tie between 1+2^-10 (odd) and 1+2^-9
  expect_half(std::nextafter(1.0f + 0x1p-11f, 2.0f), 0x3c01);
  expect_half(65504.0f, 0x7bff);  // max half
  expect_half(65519.0f, 0x7bff);
  expect_half(std::nextafter(65520.0f, 0.0f), 0x7bff);
  expect_half(65520.0f, 0x7c00);  // tie with 65536: overflows to inf
  expect_half(-65520.0f, 0xfc00);
  expect_half(1e10f, 0x7c00);
  expect_half(std::numeric_limits<float>::max(), 0x7c00);
  expect_half(INFINITY, 0x7c00);
  expect_half(-INFINITY, 0xfc00);
  expect_half(0x1p-14f, 0x0400);         // smallest normal half
  expect_half(1023 * 0x1p-24f, 0x03ff);  // largest subnormal
  expect_half(2047 * 0x1p-25f, 0x0400);  // tie between 0x03ff (odd) and 0x0400
  expect_half(0x1p-24f, 0x0001);         // smallest subnormal
  expect_half(0x1p-25f, 0x0000);         // tie between 0 and 2^-24: even is 0
  expect_half(std::nextafter(0x1p-25f, 1.0f), 0x0001);
  expect_half(-std::nextafter(0x1p-25f, 1.0f), 0x8001);
  expect_half(3 * 0x1p-25f, 0x0002);  // tie between 1 (odd) and 2
  expect_half(5 * 0x1p-25f, 0x0002);  // tie between 2 (even) and 3
  expect_half(1e-10f, 0x0000);
  expect_half(-1e-10f, 0x8000);
  expect_half(std::numeric_limits<float>::denorm_min(), 0x0000);
  expect_half(std::numeric_limits<float>::min(), 0x0000);
  EXPECT_TRUE(half_is_nan(float_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(float_to_fp16(from_bits(0x7f800001u))));  // signalling, low payload
  EXPECT_TRUE(half_is_nan(float_to_fp16(from_bits(0xff800001u))));
  EXPECT_EQ(float_to_fp16(from_bits(0xff800001u)) & 0x8000u, 0x8000u);
}

// Proves: narrowing equals the independent oracle at every boundary of every half interval:
// each half value, the exact midpoints to its successor (the ties) and the floats one ulp to
// either side of both, across the whole finite range, subnormals and overflow included.
TEST(Fp16, NarrowingMatchesOracleAtAllTiesAndNeighbours) {
  for (uint32_t i = 0; i <= 0x7bff; ++i) {
    const double v = half_value(uint16_t(i));
    const double next = i == 0x7bff ? 65536.0 : half_value(uint16_t(i + 1));
    const float mid = float((v + next) / 2);  // exact: needs at most 12 significant bits
    ASSERT_EQ(double(mid), (v + next) / 2);
    for (float f : {float(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f),
                    std::nextafter(float(v), 0.0f), std::nextafter(float(v), 1e30f)}) {
      ASSERT_EQ(float_to_fp16(f), half_rne_oracle(f)) << "f=" << f;
      ASSERT_EQ(float_to_fp16(-f), half_rne_oracle(-f)) << "f=" << -f;
    }
  }
}

// Proves: narrowing equals the oracle on random floats, both over the whole bit space (mostly
// overflow or underflow) and concentrated on the magnitudes a half can hold.
TEST(Fp16, NarrowingMatchesOracleOnRandomFloats) {
  SplitMix64 rng(12345);
  for (int i = 0; i < 300000; ++i) {
    const float f = from_bits(uint32_t(rng.next()));
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(float_to_fp16(f)));
      continue;
    }
    ASSERT_EQ(float_to_fp16(f), half_rne_oracle(f)) << "f=" << f;
  }
  for (int i = 0; i < 300000; ++i) {
    // Exponent field 100..143: 2^-27 .. 2^16, covering subnormal halves and overflow.
    const uint32_t exp = 100 + uint32_t(rng.next() % 44);
    const uint32_t bits = uint32_t(rng.next() & 0x807fffffu) | (exp << 23);
    const float f = from_bits(bits);
    ASSERT_EQ(float_to_fp16(f), half_rne_oracle(f)) << "f=" << f;
  }
}

// Proves: bf16 widening is exact (the bits shifted up) and every non-NaN bf16 round-trips;
// NaN bf16 values widen to NaN and narrow back to NaN.
TEST(Fp16, Bf16ExhaustiveRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = uint16_t(i);
    const float f = bf16_to_float(b);
    ASSERT_EQ(std::bit_cast<uint32_t>(f), i << 16);
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_TRUE(bf16_is_nan(float_to_bf16(f))) << "b=0x" << std::hex << i;
    } else {
      ASSERT_EQ(float_to_bf16(f), b) << "b=0x" << std::hex << i;
    }
  }
}

// Proves: bf16 narrowing rounds to nearest even (checked at every tie and its neighbours and
// on random floats against the oracle), overflows to inf at the IEEE threshold, and keeps NaN
// NaN, including signalling NaNs whose payload lies only in the low 16 bits (truncation would
// turn those into inf).
TEST(Fp16, Bf16NarrowingRoundsToNearestEven) {
  for (uint32_t i = 0; i < 0x7f80; ++i) {
    const uint32_t base = i << 16;
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const float f = from_bits(base | low);
      ASSERT_EQ(float_to_bf16(f), bf16_rne_oracle(f)) << std::hex << (base | low);
      ASSERT_EQ(float_to_bf16(-f), bf16_rne_oracle(-f)) << std::hex << (base | low);
    }
  }
  SplitMix64 rng(777);
  for (int i = 0; i < 300000; ++i) {
    const float f = from_bits(uint32_t(rng.next()));
    if (std::isnan(f)) {
      ASSERT_TRUE(bf16_is_nan(float_to_bf16(f)));
      continue;
    }
    ASSERT_EQ(float_to_bf16(f), bf16_rne_oracle(f)) << "f=" << f;
  }
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie, even is down
  EXPECT_EQ(float_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie, even is up
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(from_bits(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  for (uint32_t nan : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu, 0xffffffffu}) {
    const uint16_t b = float_to_bf16(from_bits(nan));
    EXPECT_TRUE(bf16_is_nan(b)) << std::hex << nan;
    EXPECT_EQ(b & 0x8000u, (nan >> 16) & 0x8000u) << std::hex << nan;
  }
}

}  // namespace
}  // namespace tzero
