// K-quants (Q4_K, Q6_K): block layouts round-trip, dequantization error is bounded by the
// quantization step, and the canonical dot products agree with a float64 computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/dot.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "support/test_support.h"

// Packing then unpacking the 6-bit scales and mins of Q4_K gives back every value 0..63.
TEST(QuantK, Q4KScalePackingRoundTrips) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> x(256);
    // Sub-blocks with very different ranges exercise all 6 bits of scales and mins.
    for (int j = 0; j < 8; ++j)
      for (int l = 0; l < 32; ++l)
        x[32 * j + l] = float(rng() % 1000) / 1000.0f * float(j + 1 + trial % 5) - float(j % 3);
    tzero::BlockQ4_K b;
    tzero::quantize_row_q4_k(x.data(), &b, 256);
    std::vector<float> y(256);
    tzero::dequantize_row_q4_k(&b, y.data(), 256);
    const float d = tzero::fp16_to_float(b.d), dmin = tzero::fp16_to_float(b.dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      tzero::q4_k_scale_min(b.scales, j, &sc, &m);
      ASSERT_GE(sc, 0);
      ASSERT_LE(sc, 63);
      // Each value is within one quantization step (plus the scale rounding) of the input.
      const float step = d * float(sc);
      for (int l = 0; l < 32; ++l)
        EXPECT_LE(std::fabs(y[32 * j + l] - x[32 * j + l]), step + 2.0f * (d + dmin) + 1e-6f)
            << "trial " << trial << " sub-block " << j;
    }
  }
}

TEST(QuantK, DequantizationErrorIsBoundedForBothTypes) {
  const auto x = tzero::test::random_floats(256 * 16, 5);
  std::vector<tzero::BlockQ4_K> q4(16);
  std::vector<tzero::BlockQ6_K> q6(16);
  tzero::quantize_row(tzero::TensorType::Q4_K, x.data(), q4.data(), x.size());
  tzero::quantize_row(tzero::TensorType::Q6_K, x.data(), q6.data(), x.size());
  std::vector<float> y4(x.size()), y6(x.size());
  tzero::dequantize_row(tzero::TensorType::Q4_K, q4.data(), y4.data(), x.size());
  tzero::dequantize_row(tzero::TensorType::Q6_K, q6.data(), y6.data(), x.size());
  double e4 = 0, e6 = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e4 += std::pow(y4[i] - x[i], 2);
    e6 += std::pow(y6[i] - x[i], 2);
    ref += std::pow(x[i], 2);
  }
  // Relative RMS error: about 2^-4 for 4-bit and 2^-6 for 6-bit quants of normal data.
  EXPECT_LT(std::sqrt(e4 / ref), 0.12);
  EXPECT_LT(std::sqrt(e6 / ref), 0.03);
  EXPECT_LT(std::sqrt(e6 / ref), std::sqrt(e4 / ref) / 2) << "6 bits must beat 4 bits";
}

// The scalar references against float64 sums of the dequantized weights times the
// dequantized activations: only float rounding separates them.
TEST(QuantK, DotRefsAgreeWithFloat64) {
  for (size_t nb : {1, 3, 8, 9, 22}) {
    const size_t n = nb * 256;
    const auto w = tzero::test::random_floats(n, uint32_t(nb)),
               x = tzero::test::random_floats(n, uint32_t(nb + 100));
    std::vector<tzero::BlockQ4_K> q4(nb);
    std::vector<tzero::BlockQ6_K> q6(nb);
    std::vector<tzero::ActQ8K> xq(nb);
    tzero::quantize_row_q4_k(w.data(), q4.data(), n);
    tzero::quantize_row_q6_k(w.data(), q6.data(), n);
    tzero::quantize_act_q8k(x.data(), xq.data(), n);
    std::vector<float> w4(n), w6(n);
    tzero::dequantize_row_q4_k(q4.data(), w4.data(), n);
    tzero::dequantize_row_q6_k(q6.data(), w6.data(), n);
    double r4 = 0, r6 = 0, mag = 0;
    for (size_t i = 0; i < n; ++i) {
      const double xv = double(xq[i / 256].d) * xq[i / 256].qs[i % 256];
      r4 += double(w4[i]) * xv;
      r6 += double(w6[i]) * xv;
      mag += std::fabs(double(w4[i]) * xv);
    }
    // Float rounding of p, of A (|A| may exceed 2^24) and of the lane sums: a few ulp of the
    // magnitude sum.
    EXPECT_NEAR(tzero::dot_q4_k_ref(q4.data(), xq.data(), n), r4, 1e-5 * mag + 1e-6) << nb;
    EXPECT_NEAR(tzero::dot_q6_k_ref(q6.data(), xq.data(), n), r6, 1e-5 * mag + 1e-6) << nb;
  }
}

TEST(QuantK, ActivationBlockSumsAreExact) {
  const auto x = tzero::test::random_floats(512, 9, 3.0f);
  std::vector<tzero::ActQ8K> q(2);
  tzero::quantize_act_q8k(x.data(), q.data(), x.size());
  for (const auto& b : q)
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += b.qs[16 * g + l];
      EXPECT_EQ(b.bsums[g], s);
    }
  std::vector<float> zeros(256, 0.0f);
  tzero::quantize_act_q8k(zeros.data(), q.data(), 256);
  EXPECT_EQ(q[0].d, 0.0f);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(q[0].qs[i], 0);
}

// Q5_K: the fifth bit lands where the format puts it (bit 2c or 2c+1 of qh[l] for element
// 64c + l or 64c + 32 + l), its error is between Q4_K's and Q6_K's, and its dot reference
// agrees with float64 over the dequantized values.
TEST(QuantK, Q5KLayoutErrorAndDot) {
  tzero::BlockQ5_K b{};
  b.qs[32 * 2 + 5] = 0x3a;     // chunk 2, l = 5: low nibble 10, high nibble 3
  b.qh[5] = uint8_t(1u << 4);  // bit 2c (c = 2): the low-nibble element gets +16
  uint8_t q[256];
  tzero::q5_k_unpack(b, q);
  EXPECT_EQ(q[128 + 5], 26);
  EXPECT_EQ(q[128 + 32 + 5], 3);
  b.qh[5] = uint8_t(1u << 5);  // bit 2c+1: the high-nibble element
  tzero::q5_k_unpack(b, q);
  EXPECT_EQ(q[128 + 5], 10);
  EXPECT_EQ(q[128 + 32 + 5], 19);

  const auto x = tzero::test::random_floats(256 * 16, 5);
  std::vector<tzero::BlockQ4_K> q4(16);
  std::vector<tzero::BlockQ5_K> q5(16);
  tzero::quantize_row_q4_k(x.data(), q4.data(), x.size());
  tzero::quantize_row_q5_k(x.data(), q5.data(), x.size());
  std::vector<float> y4(x.size()), y5(x.size());
  tzero::dequantize_row_q4_k(q4.data(), y4.data(), x.size());
  tzero::dequantize_row_q5_k(q5.data(), y5.data(), x.size());
  double e4 = 0, e5 = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e4 += std::pow(y4[i] - x[i], 2);
    e5 += std::pow(y5[i] - x[i], 2);
    ref += std::pow(x[i], 2);
  }
  EXPECT_LT(std::sqrt(e5 / ref), std::sqrt(e4 / ref) * 0.7) << "5 bits must beat 4 bits";

  for (size_t nb : {1, 3, 9}) {
    const size_t n = nb * 256;
    const auto w = tzero::test::random_floats(n, uint32_t(nb)),
               a = tzero::test::random_floats(n, uint32_t(nb + 100));
    std::vector<tzero::BlockQ5_K> wq(nb);
    std::vector<tzero::ActQ8K> aq(nb);
    tzero::quantize_row_q5_k(w.data(), wq.data(), n);
    tzero::quantize_act_q8k(a.data(), aq.data(), n);
    std::vector<float> wd(n);
    tzero::dequantize_row_q5_k(wq.data(), wd.data(), n);
    double r = 0, mag = 0;
    for (size_t i = 0; i < n; ++i) {
      const double av = double(aq[i / 256].d) * aq[i / 256].qs[i % 256];
      r += double(wd[i]) * av;
      mag += std::fabs(double(wd[i]) * av);
    }
    EXPECT_NEAR(tzero::dot_q5_k_ref(wq.data(), aq.data(), n), r, 1e-5 * mag + 1e-6) << nb;
  }
}
