// IQ4_XS, Q3_K and Q2_K: hand-built blocks dequantize to the format's formula (the nibble and
// bit positions of kernels/quant_k2.h), quantize -> dequantize errors are bounded and ordered
// by bits, and the canonical dot products agree with a float64 computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/dot.h"
#include "kernels/quant.h"
#include "kernels/quant_k2.h"
#include "support/test_support.h"

namespace {
constexpr uint16_t kOne = 0x3c00, kHalf = 0x3800;  // f16 1.0 and 0.5

// The relative RMS error of quantizing x to type t and back.
double rel_rms_error(tzero::TensorType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(tzero::row_bytes(t, x.size()));
  tzero::quantize_row(t, x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  tzero::dequantize_row(t, q.data(), y.data(), x.size());
  double e = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += std::pow(double(y[i]) - x[i], 2);
    ref += std::pow(double(x[i]), 2);
  }
  return std::sqrt(e / ref);
}

// dot(w, a) of type t by the scalar reference against float64 over the dequantized weights
// and activations, for 1, 3 and 9 blocks.
template <typename Block>
void expect_dot_matches_float64(tzero::TensorType t,
                                float (*dot)(const Block*, const tzero::ActQ8K*, size_t)) {
  for (size_t nb : {1, 3, 9}) {
    const size_t n = nb * 256;
    const auto w = tzero::test::random_floats(n, uint32_t(nb)),
               a = tzero::test::random_floats(n, uint32_t(nb + 100));
    std::vector<Block> wq(nb);
    std::vector<tzero::ActQ8K> aq(nb);
    tzero::quantize_row(t, w.data(), wq.data(), n);
    tzero::quantize_act_q8k(a.data(), aq.data(), n);
    std::vector<float> wd(n);
    tzero::dequantize_row(t, wq.data(), wd.data(), n);
    double r = 0, mag = 0;
    for (size_t i = 0; i < n; ++i) {
      const double av = double(aq[i / 256].d) * aq[i / 256].qs[i % 256];
      r += double(wd[i]) * av;
      mag += std::fabs(double(wd[i]) * av);
    }
    // Float products p = d_w * d_x and the 8-lane sums: a few float roundings of the magnitude.
    EXPECT_NEAR(dot(wq.data(), aq.data(), n), r, 1e-5 * mag + 1e-6)
        << tzero::traits(t).name << " nb=" << nb;
  }
}
}  // namespace

TEST(QuantK2, TypeTraits) {
  EXPECT_EQ(tzero::traits(tzero::TensorType::IQ4_XS).block_size, 256u);
  EXPECT_EQ(tzero::traits(tzero::TensorType::IQ4_XS).type_size, 136u);
  EXPECT_EQ(tzero::traits(tzero::TensorType::Q3_K).type_size, 110u);
  EXPECT_EQ(tzero::traits(tzero::TensorType::Q2_K).type_size, 84u);
  EXPECT_EQ(uint32_t(tzero::TensorType::IQ4_XS), 23u);
  EXPECT_EQ(tzero::tensor_type_from_name("IQ4_XS"), tzero::TensorType::IQ4_XS);
  for (auto t : {tzero::TensorType::IQ4_XS, tzero::TensorType::Q3_K, tzero::TensorType::Q2_K})
    EXPECT_TRUE(tzero::traits(t).supported);
}

// IQ4_XS: sub-block 3's 6-bit scale is split over scales_l[1] (high nibble) and bits 6-7 of
// scales_h; element 32*3 + 5 is the low nibble of qs[16*3 + 5], element 32*3 + 16 + 5 its high
// nibble; a nibble indexes kIQ4NLValues.
TEST(QuantK2, IQ4XSLayout) {
  tzero::BlockIQ4_XS b{};
  b.d = kOne;
  const int ls = 40;                        // ls - 32 = 8
  b.scales_l[1] = uint8_t((ls & 15) << 4);  // j = 3: high nibble of scales_l[1]
  b.scales_h = uint16_t((ls >> 4) << 6);    // bits 2j, 2j+1
  b.qs[16 * 3 + 5] = 0xa2;                  // low nibble 2, high nibble 10
  std::vector<float> y(256);
  tzero::dequantize_row_iq4_xs(&b, y.data(), 256);
  EXPECT_EQ(y[32 * 3 + 5], 8.0f * -83.0f);
  EXPECT_EQ(y[32 * 3 + 16 + 5], 8.0f * 25.0f);
  EXPECT_EQ(y[32 * 3 + 4], 8.0f * -127.0f);  // nibble 0 with the same scale
  EXPECT_EQ(y[0], -32.0f * -127.0f);         // every other scale is 0 - 32
  EXPECT_EQ(y[32 * 2 + 5], -32.0f * -127.0f);

  const auto x = tzero::test::random_floats(256 * 16, 7);
  const double e = rel_rms_error(tzero::TensorType::IQ4_XS, x);
  EXPECT_LT(e, 0.12) << e;
  EXPECT_LT(e, rel_rms_error(tzero::TensorType::Q3_K, x) * 0.7) << "4 bits must beat 3 bits";
  expect_dot_matches_float64<tzero::BlockIQ4_XS>(tzero::TensorType::IQ4_XS, tzero::dot_iq4_xs_ref);
}

// Q3_K: sub-block 13's scale has its low 4 bits in the high nibble of scales[5] and its high 2
// bits in bits 6-7 of scales[9]; element 211 = 128 + 32*2 + 19 takes q2 from bits 4-5 of
// qs[32 + 19] and its high bit from bit 6 of hmask[19] (set: q2, clear: q2 - 4).
TEST(QuantK2, Q3KLayout) {
  tzero::BlockQ3_K b{};
  b.d = kOne;
  const int sc = 45;  // sc - 32 = 13
  b.scales[5] = uint8_t((sc & 15) << 4);
  b.scales[9] = uint8_t((sc >> 4) << 6);
  b.qs[32 + 19] = uint8_t(1 << 4);
  std::vector<float> y(256);
  tzero::dequantize_row_q3_k(&b, y.data(), 256);
  EXPECT_EQ(y[211], 13.0f * (1 - 4));
  EXPECT_EQ(y[208], 13.0f * -4.0f);  // same sub-block, q2 0, no high bit
  EXPECT_EQ(y[0], -32.0f * -4.0f);   // every other scale is 0 - 32
  EXPECT_EQ(y[128 + 32 * 1 + 19], -32.0f * -4.0f);
  b.hmask[19] = uint8_t(1 << 6);
  tzero::dequantize_row_q3_k(&b, y.data(), 256);
  EXPECT_EQ(y[211], 13.0f * 1.0f);
  EXPECT_EQ(y[19], -32.0f * -4.0f);  // bit 0 of hmask[19] (element 19) is still clear
  b.hmask[19] = 1;
  tzero::dequantize_row_q3_k(&b, y.data(), 256);
  EXPECT_EQ(y[19], -32.0f * 0.0f);

  const auto x = tzero::test::random_floats(256 * 16, 8);
  const double e = rel_rms_error(tzero::TensorType::Q3_K, x);
  EXPECT_LT(e, 0.25) << e;
  EXPECT_LT(e, rel_rms_error(tzero::TensorType::Q2_K, x) * 0.8) << "3 bits must beat 2 bits";
  expect_dot_matches_float64<tzero::BlockQ3_K>(tzero::TensorType::Q3_K, tzero::dot_q3_k_ref);
}

// Q2_K: scales[13] holds sub-block 13's scale (low nibble) and min (high nibble); element 211
// takes q from bits 4-5 of qs[32 + 19]: x = d * sc * q - dmin * m.
TEST(QuantK2, Q2KLayout) {
  tzero::BlockQ2_K b{};
  b.d = kOne;
  b.dmin = kHalf;
  b.scales[13] = uint8_t(5 | (6 << 4));
  b.qs[32 + 19] = uint8_t(3 << 4);
  std::vector<float> y(256);
  tzero::dequantize_row_q2_k(&b, y.data(), 256);
  EXPECT_EQ(y[211], 5.0f * 3.0f - 0.5f * 6.0f);
  EXPECT_EQ(y[210], -0.5f * 6.0f);
  EXPECT_EQ(y[128 + 32 * 3 + 19], 0.0f);  // bits 6-7 of the same byte, sub-block 15
  b.qs[32 + 19] = uint8_t(3 << 6);
  tzero::dequantize_row_q2_k(&b, y.data(), 256);
  EXPECT_EQ(y[211], -0.5f * 6.0f);

  const auto x = tzero::test::random_floats(256 * 16, 9);
  const double e = rel_rms_error(tzero::TensorType::Q2_K, x);
  EXPECT_LT(e, 0.45) << e;
  expect_dot_matches_float64<tzero::BlockQ2_K>(tzero::TensorType::Q2_K, tzero::dot_q2_k_ref);
}
