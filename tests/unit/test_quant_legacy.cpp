// The 32-element block types of quant_legacy.h (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4): hand-built
// blocks dequantize to ggml's layouts, the quantizers' round-trip errors stay within their
// bounds, and the scalar dots (dot.h) agree with float64 within their rounding bounds.
#include "kernels/quant_legacy.h"
#include "unit/kernel_test_util.h"

namespace tzero {
namespace {

// qs[i] = i | (15 - i) << 4: element i has nibble i, element 16 + i nibble 15 - i.
void ramp_nibbles(uint8_t* qs) {
  for (int i = 0; i < 16; ++i) qs[i] = uint8_t(i | ((15 - i) << 4));
}

// qs[i] = i | i << 4 and qh with bits 0-3 and 20-23 set (bytes 0x0f, 0, 0xf0, 0).
void fifth_bit_pattern(uint8_t* qs, uint8_t* qh) {
  for (int i = 0; i < 16; ++i) qs[i] = uint8_t(i | (i << 4));
  const uint8_t h[4] = {0x0f, 0x00, 0xf0, 0x00};
  std::memcpy(qh, h, 4);
}

std::vector<float> dequant(TensorType t, const void* b) {
  std::vector<float> out(32);
  dequantize_row(t, b, out.data(), 32);
  return out;
}

// Proves: Q4_1's layout: x = d * q + m, element i the low nibble of qs[i], i + 16 the high one.
TEST(QuantLegacy, Q4_1KnownBlock) {
  BlockQ4_1 b;
  b.d = 0x3800;  // 0.5
  b.m = 0xbc00;  // -1
  ramp_nibbles(b.qs);
  const std::vector<float> x = dequant(TensorType::Q4_1, &b);
  EXPECT_EQ(x[0], -1.0f);
  EXPECT_EQ(x[5], 1.5f);
  EXPECT_EQ(x[15], 6.5f);
  EXPECT_EQ(x[16], 6.5f);
  EXPECT_EQ(x[31], -1.0f);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(x[i], 0.5f * float(i) - 1.0f) << i;
    EXPECT_EQ(x[16 + i], 0.5f * float(15 - i) - 1.0f) << i;
  }
}

// Proves: Q5_0's layout: the fifth bit of element i is bit i of qh (little-endian), x = d(q - 16).
TEST(QuantLegacy, Q5_0KnownBlock) {
  BlockQ5_0 b;
  b.d = 0x3c00;  // 1
  fifth_bit_pattern(b.qs, b.qh);
  const std::vector<float> x = dequant(TensorType::Q5_0, &b);
  const float expect[32] = {0,   1,   2,   3,   -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1,
                            -16, -15, -14, -13, 4,   5,   6,   7,  -8, -7, -6, -5, -4, -3, -2, -1};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(x[i], expect[i]) << i;
}

// Proves: Q5_1's layout: Q5_0's bits, x = d * q + m with q unsigned.
TEST(QuantLegacy, Q5_1KnownBlock) {
  BlockQ5_1 b;
  b.d = 0x3400;  // 0.25
  b.m = 0x4000;  // 2
  fifth_bit_pattern(b.qs, b.qh);
  const std::vector<float> x = dequant(TensorType::Q5_1, &b);
  EXPECT_EQ(x[0], 6.0f);    // q = 16
  EXPECT_EQ(x[4], 3.0f);    // q = 4
  EXPECT_EQ(x[16], 2.0f);   // q = 0
  EXPECT_EQ(x[20], 7.0f);   // q = 20
  EXPECT_EQ(x[31], 5.75f);  // q = 15
}

// Proves: IQ4_NL's layout: x = d * kvalues_iq4nl[nibble].
TEST(QuantLegacy, IQ4_NLKnownBlock) {
  BlockIQ4_NL b;
  b.d = 0x3800;  // 0.5
  ramp_nibbles(b.qs);
  const std::vector<float> x = dequant(TensorType::IQ4_NL, &b);
  const float table[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                           1,    13,   25,  38,  53,  69,  89,  113};
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(x[i], 0.5f * table[i]) << i;
    EXPECT_EQ(x[16 + i], 0.5f * table[15 - i]) << i;
  }
  EXPECT_EQ(x[0], -63.5f);
  EXPECT_EQ(x[31], -63.5f);
}

// Proves: MXFP4's layout: x = fp4x2[nibble] * 2^(e - 128) (ggml's E8M0_TO_FP32_HALF), exact
// for every e, the subnormal ends included.
TEST(QuantLegacy, MXFP4KnownBlock) {
  const float fp4x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int e : {0, 1, 2, 100, 127, 128, 131, 254, 255}) {
    EXPECT_EQ(e8m0_half_to_float(uint8_t(e)), std::ldexp(1.0f, e - 128)) << e;
    BlockMXFP4 b;
    b.e = uint8_t(e);
    ramp_nibbles(b.qs);
    const std::vector<float> x = dequant(TensorType::MXFP4, &b);
    for (int i = 0; i < 16; ++i) {
      EXPECT_EQ(x[i], fp4x2[i] * std::ldexp(1.0f, e - 128)) << e << " " << i;
      EXPECT_EQ(x[16 + i], fp4x2[15 - i] * std::ldexp(1.0f, e - 128)) << e << " " << i;
    }
  }
  // Nibble 8 (FP4's -0) is the integer 0 of ggml's int8 table: +0 after scaling.
  const std::array<uint8_t, 17> neg_zero = {128, 0x08};
  EXPECT_EQ(bits(dequant(TensorType::MXFP4, neg_zero.data())[0]), 0u);
}

// Proves: the quantizers write the layout dequantize_row reads: blocks whose values are exactly
// on the grid (with the extreme codes present, so the quantizer's d is the grid's) come back
// bit for bit.
TEST(QuantLegacy, GridBlocksRoundTripExactly) {
  const float fp4x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
                       TensorType::MXFP4}) {
    float x[32];
    for (int i = 0; i < 32; ++i) {
      const int q16 = (7 * i + 3) % 16, q32 = (11 * i + 5) % 32;
      switch (t) {
        case TensorType::Q4_1:
          x[i] = 0.5f * float(i == 0 ? 0 : i == 1 ? 15 : q16) - 1.0f;
          break;
        case TensorType::Q5_0:
          x[i] = float((i == 0 ? 0 : q32) - 16);
          break;
        case TensorType::Q5_1:
          x[i] = 0.25f * float(i == 0 ? 0 : i == 1 ? 31 : q32) + 2.0f;
          break;
        case TensorType::IQ4_NL:
          x[i] = -float(kIq4nlValues[i == 0 ? 0 : q16]);  // d = -1
          break;
        default:
          x[i] = fp4x2[i == 0 ? 7 : q16] * 0.125f;  // max 1.5: e = 125, 2^(e - 128) = 1/8
          break;
      }
    }
    std::vector<uint8_t> blk(traits(t).type_size);
    quantize_row(t, x, blk.data(), 32);
    const std::vector<float> back = dequant(t, blk.data());
    for (int i = 0; i < 32; ++i) EXPECT_EQ(bits(back[i]), bits(x[i])) << traits(t).name << " " << i;
  }
}

// Random blocks spanning 2^-10 .. 2^9 in magnitude, plus a zero block.
std::vector<float> legacy_input(uint64_t seed, size_t nb) {
  SplitMix64 rng(seed);
  std::vector<float> x = rand_vec(rng, nb * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= std::ldexp(1.0f, int(i / 32) % 20 - 10);
  for (int i = 0; i < 32; ++i) x[32 + i] = 0;
  return x;
}

// Proves: Q4_1 and Q5_1 round trips. In units of d = (hi - lo) / L the code is round-half-up of
// (x - lo) / d, error <= 1/2 plus the roundings of x - lo, * id and + 0.5 (<= (L + 2) 2.01u);
// storing d and m as f16 adds L |d - d16| + |m - m16|; d16 * q + m16 rounds twice.
TEST(QuantLegacy, MinTypesRoundTripErrorBound) {
  const size_t nb = 64;
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_1}) {
    const int levels = t == TensorType::Q4_1 ? 15 : 31;
    const std::vector<float> x = legacy_input(12, nb);
    std::vector<uint8_t> b(nb * traits(t).type_size);
    std::vector<float> back(nb * 32);
    quantize_row(t, x.data(), b.data(), nb * 32);
    dequantize_row(t, b.data(), back.data(), nb * 32);
    for (size_t k = 0; k < nb; ++k) {
      const float* xb = &x[k * 32];
      const float lo = *std::min_element(xb, xb + 32), hi = *std::max_element(xb, xb + 32);
      const double d = (hi - lo) / float(levels);
      uint16_t d16b, m16b;
      std::memcpy(&d16b, &b[k * traits(t).type_size], 2);
      std::memcpy(&m16b, &b[k * traits(t).type_size + 2], 2);
      const double d16 = fp16_to_float_compute(d16b), m16 = fp16_to_float_compute(m16b);
      ASSERT_EQ(d16b, float_to_fp16(float(d)));
      ASSERT_EQ(m16b, float_to_fp16(lo));
      for (int i = 0; i < 32; ++i) {
        const double bound = d * (0.5 + (levels + 2) * 2.01 * kU) + levels * std::fabs(d - d16) +
                             std::fabs(lo - m16) +
                             4 * kU * (levels * std::fabs(d16) + std::fabs(m16));
        ASSERT_LE(std::fabs(double(xb[i]) - back[k * 32 + i]), bound) << traits(t).name << k << i;
      }
    }
  }
}

// Proves: Q5_0 round trip. As Q4_0 with 32 levels: units of |d| = |v| / 16, error <= 1/2 except
// x / d >= 15.5, which clamps to 15 (error <= 1); x * id and + 16.5 round (<= 16 * 2.01u +
// 32.5u); storing d as f16 adds 16 |d - d16|.
TEST(QuantLegacy, Q5_0RoundTripErrorBound) {
  const size_t nb = 64;
  const std::vector<float> x = legacy_input(13, nb);
  std::vector<BlockQ5_0> b(nb);
  std::vector<float> back(nb * 32);
  quantize_row(TensorType::Q5_0, x.data(), b.data(), nb * 32);
  dequantize_row(TensorType::Q5_0, b.data(), back.data(), nb * 32);
  for (size_t k = 0; k < nb; ++k) {
    float v = 0;
    for (int i = 0; i < 32; ++i)
      if (std::fabs(x[k * 32 + i]) > std::fabs(v)) v = x[k * 32 + i];
    const double d = v / -16.0f, d16 = fp16_to_float_compute(b[k].d);
    ASSERT_EQ(b[k].d, float_to_fp16(float(d)));
    for (int i = 0; i < 32; ++i) {
      const double xd = d != 0 ? x[k * 32 + i] / d : 0;
      const double units = (xd > 15.5 - 1e-5 ? 1.0 : 0.5) + 16 * 2.01 * kU + 32.5 * kU;
      const double bound = std::fabs(d) * units + 16 * std::fabs(d - d16);
      ASSERT_LE(std::fabs(double(x[k * 32 + i]) - back[k * 32 + i]), bound) << k << " " << i;
    }
  }
}

// Proves: IQ4_NL and MXFP4 pick the nearest table value. IQ4_NL: d = v / -127, the error is
// |d| times the distance from x / d to the nearest table entry (plus the rounding of x * id,
// and 127 |d - d16| for the f16 scale). MXFP4: e = floor(log2 max|x|) - 2 + 127, so
// max|x| / 2^(e - 128) lies in [8, 16); the scale is exact, so the error is exactly the
// distance to the nearest of table * 2^(e - 128).
TEST(QuantLegacy, TableTypesPickTheNearestValue) {
  const size_t nb = 64;
  const std::vector<float> x = legacy_input(14, nb);
  std::vector<BlockIQ4_NL> bi(nb);
  std::vector<BlockMXFP4> bm(nb);
  std::vector<float> bi_back(nb * 32), bm_back(nb * 32);
  quantize_row(TensorType::IQ4_NL, x.data(), bi.data(), nb * 32);
  dequantize_row(TensorType::IQ4_NL, bi.data(), bi_back.data(), nb * 32);
  quantize_row(TensorType::MXFP4, x.data(), bm.data(), nb * 32);
  dequantize_row(TensorType::MXFP4, bm.data(), bm_back.data(), nb * 32);
  auto nearest = [](const int8_t* table, double v) {
    double best = 1e300;
    for (int j = 0; j < 16; ++j) best = std::min(best, std::fabs(v - table[j]));
    return best;
  };
  for (size_t k = 0; k < nb; ++k) {
    const float* xb = &x[k * 32];
    float v = 0, amax = 0;
    for (int i = 0; i < 32; ++i) {
      if (std::fabs(xb[i]) > std::fabs(v)) v = xb[i];
      amax = std::max(amax, std::fabs(xb[i]));
    }
    const double d = v / -127.0f, d16 = fp16_to_float_compute(bi[k].d);
    ASSERT_EQ(bi[k].d, float_to_fp16(float(d)));
    if (amax > 0) {
      const double dm = e8m0_half_to_float(bm[k].e);
      ASSERT_GE(amax / dm, 8.0) << k;
      ASSERT_LT(amax / dm, 16.0) << k;
    } else {
      ASSERT_EQ(bm[k].e, 0) << k;
    }
    const double dm = e8m0_half_to_float(bm[k].e);
    for (int i = 0; i < 32; ++i) {
      const double xd = d != 0 ? xb[i] / d : 0;
      const double bound_nl = std::fabs(d) * (nearest(kIq4nlValues, xd) + 128 * 2.01 * kU) +
                              127 * std::fabs(d - d16) + 2 * kU * std::fabs(bi_back[k * 32 + i]);
      ASSERT_LE(std::fabs(double(xb[i]) - bi_back[k * 32 + i]), bound_nl) << k << " " << i;
      ASSERT_EQ(std::fabs(double(xb[i]) - bm_back[k * 32 + i]),
                dm * nearest(kMxfp4Values, xb[i] / dm))
          << k << " " << i;
    }
  }
}

// Scalar dots against float64 from the blocks' exact integer weights (block_ints): per block
// the integer sums are exact and p = d_w d_x (pm = m_w d_x) rounds once; each block term then
// passes through at most ceil(nb/8) fma roundings and 3 tree additions, and the min types add
// their two trees (one more rounding): |got - exact| <= gamma(ceil(nb/8) + 5) * sum of |terms|.
template <typename Block>
void check_legacy_dot(TensorType t, float (*kernel)(const Block*, const ActQ8*, size_t)) {
  SplitMix64 rng(3);
  for (size_t nb : {1, 2, 3, 7, 8, 9, 17, 64, 176}) {
    const size_t n = nb * 32;
    const std::vector<float> wf = rand_vec(rng, n), xf = rand_vec(rng, n, -3.0f, 3.0f);
    std::vector<Block> w(nb);
    std::vector<ActQ8> x(nb);
    quantize_row(t, wf.data(), w.data(), n);
    quantize_act_q8(xf.data(), x.data(), n);
    double ref = 0, mag = 0;
    for (size_t b = 0; b < nb; ++b) {
      int8_t q[32];
      block_ints(w[b], q);
      double dw, mw = 0;
      if constexpr (std::is_same_v<Block, BlockMXFP4>) {
        dw = e8m0_half_to_float(w[b].e);
      } else {
        dw = fp16_to_float_compute(w[b].d);
        if constexpr (std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>)
          mw = fp16_to_float_compute(w[b].m);
      }
      double isum = 0, xsum = 0;
      for (int i = 0; i < 32; ++i) {
        isum += double(q[i]) * x[b].qs[i];
        xsum += x[b].qs[i];
      }
      const double term = dw * x[b].d * isum, term_m = mw * x[b].d * xsum;
      ref += term + term_m;
      mag += std::fabs(term) + std::fabs(term_m);
    }
    const float got = kernel(w.data(), x.data(), n);
    const double bound = gamma(double(ceil_div(nb, 8) + 5)) * mag + double(n) * 0x1p-53 * mag;
    EXPECT_LE(std::fabs(double(got) - ref), bound) << traits(t).name << " blocks=" << nb;
    EXPECT_GT(mag, 0.0);
  }
}

// Proves: each scalar reference equals the float64 dot of its exact operands within its bound.
TEST(QuantLegacy, DotsAgainstFloat64) {
  check_legacy_dot(TensorType::Q4_1, dot_q4_1_ref);
  check_legacy_dot(TensorType::Q5_0, dot_q5_0_ref);
  check_legacy_dot(TensorType::Q5_1, dot_q5_1_ref);
  check_legacy_dot(TensorType::IQ4_NL, dot_iq4_nl_ref);
  check_legacy_dot(TensorType::MXFP4, dot_mxfp4_ref);
}

// Proves: the dots are the dequantized dots (the layouts of dot and dequantize agree): against
// float64 of dequantize_row's values through the scalar gemm. Dequantization rounds d q (and
// Q4_1, Q5_1 then + m) once or twice, the kernel rounds as above: 64u of the sum of
// |d q x| + |m x| bounds both.
TEST(QuantLegacy, DotsMatchDequantizedWeights) {
  SplitMix64 rng(4);
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
                       TensorType::MXFP4}) {
    const bool has_min = t == TensorType::Q4_1 || t == TensorType::Q5_1;
    const size_t nb = 24, n = nb * 32, bs = traits(t).type_size;
    const std::vector<float> wf = rand_vec(rng, n), xf = rand_vec(rng, n, -3.0f, 3.0f);
    std::vector<uint8_t> w(nb * bs);
    std::vector<ActQ8> x(nb);
    quantize_row(t, wf.data(), w.data(), n);
    quantize_act_q8(xf.data(), x.data(), n);
    std::vector<float> wd(n);
    dequantize_row(t, w.data(), wd.data(), n);
    double ref = 0, mag = 0;
    for (size_t k = 0; k < n; ++k) {
      const double xk = double(x[k / 32].d) * x[k / 32].qs[k % 32];
      double m = 0;
      if (has_min) {
        uint16_t m16;
        std::memcpy(&m16, &w[(k / 32) * bs + 2], 2);
        m = fp16_to_float_compute(m16);
      }
      ref += double(wd[k]) * xk;
      mag += std::fabs((double(wd[k]) - m) * xk) + std::fabs(m * xk);
    }
    float got = -1;
    scalar_kernels().gemm_for(t)(w.data(), w.size(), x.data(), n, 1, 1, &got, 1);
    EXPECT_LE(std::fabs(double(got) - ref), 64 * kU * mag) << traits(t).name;
  }
}

}  // namespace
}  // namespace tzero
