// KernelRef.*: the scalar reference kernels against float64 (see kernel_test_util.h).
#include "unit/kernel_test_util.h"

namespace tzero {
namespace {

// ---- Tolerance tests against float64 --------------------------------------------------------

// Float-weight dot products: each product w*x reaches the result through at most ceil(n/16)
// fma roundings in its lane and 4 tree additions, so |got - exact| <= gamma(ceil(n/16) + 4) *
// sum |w x|. The float64 reference is exact per product (24 + 24 bits) and its own summation
// error (n 2^-53 sum |w x|) is added to the bound.
void check_float_dot(TensorType t) {
  SplitMix64 rng(1);
  for (size_t n : kLengths) {
    const std::vector<float> x = rand_vec(rng, n, -2.0f, 2.0f), wf = rand_vec(rng, n);
    std::vector<uint16_t> w16(n);
    std::vector<float> w(n);
    for (size_t k = 0; k < n; ++k) {
      w16[k] = t == TensorType::F16 ? float_to_fp16(wf[k]) : float_to_bf16(wf[k]);
      w[k] = t == TensorType::F32   ? wf[k]
             : t == TensorType::F16 ? canon::widen_half(w16[k])
                                    : canon::widen_bf16(w16[k]);
    }
    double ref = 0, mag = 0;
    for (size_t k = 0; k < n; ++k) {
      ref += double(w[k]) * double(x[k]);
      mag += std::fabs(double(w[k]) * double(x[k]));
    }
    const float got = t == TensorType::F32   ? dot_f32_ref(w.data(), x.data(), n)
                      : t == TensorType::F16 ? dot_f16_ref(w16.data(), x.data(), n)
                                             : dot_bf16_ref(w16.data(), x.data(), n);
    const double bound = gamma(double(ceil_div(n, 16) + 4)) * mag + double(n) * 0x1p-53 * mag;
    EXPECT_LE(std::fabs(double(got) - ref), bound) << traits(t).name << " n=" << n;
  }
}

// Proves: dot_f32_ref computes the dot product within its rounding-error bound.
TEST(KernelRef, DotF32AgainstFloat64) {
  check_float_dot(TensorType::F32);
}
// Proves: dot_f16_ref widens halves exactly and computes the dot product within the bound.
TEST(KernelRef, DotF16AgainstFloat64) {
  check_float_dot(TensorType::F16);
}
// Proves: dot_bf16_ref widens bf16 exactly and computes the dot product within the bound.
TEST(KernelRef, DotBf16AgainstFloat64) {
  check_float_dot(TensorType::BF16);
}

// Quantized dot products against a float64 dot of the dequantized weights (dequantize_row:
// d * q is exact in float, 11 + 8 bits) and the de-quantized activation blocks (x.d * q, exact
// in double). Per block the integer sum is exact and p = d_w d_x is rounded once; each block
// term then passes through at most ceil(nb/8) fma roundings and 3 tree additions, so
// |got - exact| <= gamma(ceil(nb/8) + 4) * sum_b |d_w d_x isum_b|.
template <typename Block>
void check_quant_dot(TensorType t, float (*kernel)(const Block*, const ActQ8*, size_t)) {
  SplitMix64 rng(2);
  for (size_t nb : {1, 2, 3, 7, 8, 9, 17, 64, 176}) {
    const size_t n = nb * 32;
    const std::vector<float> wf = rand_vec(rng, n), xf = rand_vec(rng, n, -3.0f, 3.0f);
    std::vector<Block> w(nb);
    std::vector<ActQ8> x(nb);
    quantize_row(t, wf.data(), w.data(), n);
    quantize_act_q8(xf.data(), x.data(), n);
    std::vector<float> wd(n);
    dequantize_row(t, w.data(), wd.data(), n);
    double ref = 0, mag = 0;
    for (size_t b = 0; b < nb; ++b) {
      double blk = 0;
      for (int i = 0; i < 32; ++i) blk += double(wd[b * 32 + i]) * (double(x[b].d) * x[b].qs[i]);
      ref += blk;
      mag += std::fabs(blk);
    }
    const float got = kernel(w.data(), x.data(), n);
    const double bound = gamma(double(ceil_div(nb, 8) + 4)) * mag + double(n) * 0x1p-53 * mag;
    EXPECT_LE(std::fabs(double(got) - ref), bound) << traits(t).name << " blocks=" << nb;
  }
}

// Proves: dot_q8_0_ref equals the dot of the dequantized operands within its bound.
TEST(KernelRef, DotQ8_0AgainstFloat64) {
  check_quant_dot(TensorType::Q8_0, dot_q8_0_ref);
}
// Proves: dot_q4_0_ref (nibble order, -8 offset) equals the dequantized dot within its bound.
TEST(KernelRef, DotQ4_0AgainstFloat64) {
  check_quant_dot(TensorType::Q4_0, dot_q4_0_ref);
}

// Proves: sum_f32_ref sums within gamma(ceil(n/16) + 4) * sum |x| (same argument as the dot).
TEST(KernelRef, SumF32AgainstFloat64) {
  SplitMix64 rng(3);
  for (size_t n : kLengths) {
    const std::vector<float> x = rand_vec(rng, n);
    double ref = 0, mag = 0;
    for (float v : x) ref += v, mag += std::fabs(v);
    const double bound = gamma(double(ceil_div(n, 16) + 4)) * mag + double(n) * 0x1p-53 * mag;
    EXPECT_LE(std::fabs(double(sum_f32_ref(x.data(), n)) - ref), bound) << "n=" << n;
  }
}

// Proves: rmsnorm_ref normalizes correctly. Relative error per element: the sum of squares has
// nonnegative terms, so it is within gamma(ceil(n/16) + 4) relative; / n and + eps add u each;
// sqrt halves the error and adds u; 1/x adds u; the two products add 2u. Total (first order)
// <= gamma(m) + 6u; 7u is used to cover the second-order terms.
TEST(KernelRef, RmsNormAgainstFloat64) {
  SplitMix64 rng(4);
  const float eps = 1e-5f;
  for (size_t n : {1, 7, 64, 288, 2048, 5632}) {
    const std::vector<float> x = rand_vec(rng, n, -2.0f, 2.0f), w = rand_vec(rng, n, 0.5f, 1.5f);
    std::vector<float> out(n);
    rmsnorm_ref(x.data(), w.data(), eps, n, out.data());
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double scale = 1.0 / std::sqrt(ss / double(n) + double(eps));
    const double rel = gamma(double(ceil_div(n, 16) + 4)) + 7 * kU;
    for (size_t i = 0; i < n; ++i) {
      const double ref = double(x[i]) * scale * double(w[i]);
      ASSERT_LE(std::fabs(double(out[i]) - ref), rel * std::fabs(ref)) << "n=" << n << " i=" << i;
    }
  }
}

// Proves: rope_ref rotates the right pairs (interleaved: (2i, 2i+1); neox: (i, i + n_rot/2)) by
// the right angle pos * base^(-2i/n_rot), and leaves elements past n_rot alone. Error per
// output: cos and sin are rounded once (u each), each product rounds (u) and the difference
// rounds (u on a value <= |a| + |b|): <= 3u (|a| + |b|) + O(u^2); 3.01u is used. The double
// angle's own error (pos <= 4095 times a few 2^-53) adds at most 1e-11 (|a| + |b|).
TEST(KernelRef, RopeAgainstFloat64) {
  SplitMix64 rng(5);
  for (int n_rot : {2, 64, 128}) {
    for (double base : {10000.0, 1000000.0}) {
      const RopeTable table(n_rot, 4096, base);
      for (bool neox : {false, true}) {
        for (int pos : {0, 1, 2, 7, 100, 1000, 4095}) {
          const int head_dim = n_rot + 16;  // partial rotary: the last 16 stay as they are
          const std::vector<float> x0 = rand_vec(rng, size_t(head_dim));
          std::vector<float> x = x0;
          rope_ref(x.data(), pos, table, neox);
          const int half = n_rot / 2;
          for (int i = 0; i < half; ++i) {
            const int ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
            const double th = double(pos) * std::pow(base, -2.0 * i / n_rot);
            const double a = x0[ia], b = x0[ib];
            const double bound = (3.01 * kU + 1e-11) * (std::fabs(a) + std::fabs(b));
            ASSERT_LE(std::fabs(x[ia] - (a * std::cos(th) - b * std::sin(th))), bound)
                << "n_rot=" << n_rot << " neox=" << neox << " pos=" << pos << " i=" << i;
            ASSERT_LE(std::fabs(x[ib] - (a * std::sin(th) + b * std::cos(th))), bound)
                << "n_rot=" << n_rot << " neox=" << neox << " pos=" << pos << " i=" << i;
          }
          for (int i = n_rot; i < head_dim; ++i) ASSERT_EQ(bits(x[i]), bits(x0[i]));
        }
      }
    }
  }
}

// Proves: attention_head_ref is softmax attention over the strided K/V rows. Bound, per output:
// the kernel's score s~_t = fl(dot~ * scale) is within E_t = scale gamma(ceil(hd/16)+4)
// sum|q k_t| + u |s_t| of s_t; its max moves by <= E_max, a factor common to all weights that
// normalization cancels; the subtraction rounds (u |s_t - m| plus the shifts), exp_ref adds
// kExpRel. So each weight is exact up to a common factor times (1 + eps_t), |eps_t| <= r_t.
// The fma chain over t adds gamma(n_kv) sum e_t |v_t|, the denominator sum gamma(ceil(n/16)+4),
// the division u. |o~ - o| <= (sum p_t |v_t| (r_t + gamma_n (1 + r_t)) + |o| eps_z) / (1 -
// eps_z) + u |o~| with eps_z = max r + gamma_z (1 + max r).
TEST(KernelRef, AttentionHeadAgainstFloat64) {
  SplitMix64 rng(6);
  const size_t hd = 64, stride = 3 * hd;  // this head's K/V rows sit between two other heads'
  const float scale = 0.125f;
  for (size_t n_kv : {1, 2, 5, 17, 64, 300}) {
    const std::vector<float> q = rand_vec(rng, hd, -4.0f, 4.0f);
    const std::vector<float> k = rand_vec(rng, n_kv * stride), v = rand_vec(rng, n_kv * stride);
    std::vector<float> scratch(n_kv), out(hd);
    const float *kp = k.data(), *vp = v.data();
    attention_head_ref(q.data(), single_block(&kp, stride), single_block(&vp, stride), n_kv, hd,
                       scale, scratch.data(), out.data());
    std::vector<double> s(n_kv), e_s(n_kv), p(n_kv), r(n_kv);
    double m = -INFINITY, e_max = 0;
    for (size_t t = 0; t < n_kv; ++t) {
      double d = 0, mag = 0;
      for (size_t i = 0; i < hd; ++i) {
        d += double(q[i]) * k[t * stride + i];
        mag += std::fabs(double(q[i]) * k[t * stride + i]);
      }
      s[t] = d * scale;
      e_s[t] = scale * gamma(double(ceil_div(hd, 16) + 4)) * mag * 1.01 + kU * std::fabs(s[t]);
      m = std::max(m, s[t]);
      e_max = std::max(e_max, e_s[t]);
    }
    double z = 0, r_max = 0;
    for (size_t t = 0; t < n_kv; ++t) z += p[t] = std::exp(s[t] - m);
    for (size_t t = 0; t < n_kv; ++t) {
      p[t] /= z;
      const double shift = e_s[t] + kU * (std::fabs(s[t] - m) + e_s[t] + e_max);
      r[t] = std::expm1(shift) * (1 + kExpRel) + kExpRel;
      r_max = std::max(r_max, r[t]);
    }
    const double g_n = gamma(double(n_kv)), g_z = gamma(double(ceil_div(n_kv, 16) + 4));
    const double eps_z = r_max + g_z * (1 + r_max);
    for (size_t d = 0; d < hd; ++d) {
      double o = 0, err = 0;
      for (size_t t = 0; t < n_kv; ++t) {
        o += p[t] * v[t * stride + d];
        err += p[t] * std::fabs(v[t * stride + d]) * (r[t] + g_n * (1 + r[t]));
      }
      const double bound =
          (err + std::fabs(o) * eps_z) / (1 - eps_z) + kU * std::fabs(out[d]) + 1e-15;
      ASSERT_LE(std::fabs(out[d] - o), bound) << "n_kv=" << n_kv << " d=" << d;
    }
  }
}

// Proves: over one position the weights are exactly 1 (exp_ref(0) = 1, z = 1), so the output is
// the value row itself, bit for bit.
TEST(KernelRef, AttentionSinglePositionReturnsValueRow) {
  SplitMix64 rng(7);
  const std::vector<float> q = rand_vec(rng, 128), k = rand_vec(rng, 128), v = rand_vec(rng, 128);
  std::vector<float> scratch(1), out(128);
  const float *kp = k.data(), *vp = v.data();
  attention_head_ref(q.data(), single_block(&kp, 128), single_block(&vp, 128), 1, 128, 0.088f,
                     scratch.data(), out.data());
  EXPECT_EQ(std::memcmp(out.data(), v.data(), 128 * sizeof(float)), 0);
}

// silu and swiglu relative error: exp_ref is within kExpRel; fl(1 + e) keeps that (times
// e/(1+e) <= 1) and adds u; the division adds u; swiglu's product adds u: <= kExpRel + 3u
// (first order; 3.1u used). Absolute floor 1e-35 where e^-x overflows to inf (x < -88.7), making
// silu -0 instead of about x e^x (< 1e-36).
void check_silu(const std::vector<float>& g, const std::vector<float>& up, bool swiglu) {
  std::vector<float> out(g.size());
  if (swiglu) swiglu_ref(g.data(), up.data(), g.size(), out.data());
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double ref = x / (1.0 + std::exp(-x)) * (swiglu ? double(up[i]) : 1.0);
    const double got = swiglu ? out[i] : silu_ref(g[i]);
    const double bound = (kExpRel + (swiglu ? 3.1 : 2.1) * kU) * std::fabs(ref) + 1e-35;
    ASSERT_LE(std::fabs(got - ref), bound) << "x=" << g[i];
  }
}
// Proves: silu_ref is x * sigmoid(x) within its bound, over a dense sweep of [-100, 100].
TEST(KernelRef, SiluAgainstFloat64) {
  std::vector<float> g;
  for (int i = -200000; i <= 200000; ++i) g.push_back(float(i) * 5e-4f);
  check_silu(g, {}, false);
  EXPECT_EQ(bits(silu_ref(0.0f)), bits(0.0f));
  EXPECT_EQ(silu_ref(INFINITY), INFINITY);
}
// Proves: swiglu_ref is silu(gate) * up, element by element, and may alias its output.
TEST(KernelRef, SwigluAgainstFloat64) {
  SplitMix64 rng(8);
  const std::vector<float> g = rand_vec(rng, 5000, -30.0f, 30.0f), up = rand_vec(rng, 5000, -2, 2);
  check_silu(g, up, true);
  std::vector<float> out(g.size()), alias = g;
  swiglu_ref(g.data(), up.data(), g.size(), out.data());
  swiglu_ref(alias.data(), up.data(), g.size(), alias.data());
  EXPECT_EQ(std::memcmp(out.data(), alias.data(), out.size() * sizeof(float)), 0);
}

// Proves: swiglu_oai_ref is ggml's swiglu_oai (alpha 1.702, limit 7) as kernels/ops.h writes it:
// the gate clamped above only, the up clamped both ways, each step rounded; close to float64
// away from the clamps, exact at them, and it may alias its output.
TEST(KernelRef, SwigluOaiClampsAndMatchesFloat64) {
  SplitMix64 rng(9);
  const std::vector<float> g = rand_vec(rng, 4000, -12.0f, 12.0f), up = rand_vec(rng, 4000, -9, 9);
  std::vector<float> out(g.size()), alias = g;
  swiglu_oai_ref(g.data(), up.data(), g.size(), out.data());
  swiglu_oai_ref(alias.data(), up.data(), g.size(), alias.data());
  EXPECT_EQ(std::memcmp(out.data(), alias.data(), out.size() * sizeof(float)), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = std::min(double(g[i]), 7.0), y = std::clamp(double(up[i]), -7.0, 7.0);
    const double want = x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
    EXPECT_NEAR(out[i], want, 1e-5 * (1.0 + std::fabs(want))) << g[i] << " " << up[i];
  }
  // Beyond the limits: gate 10 is 7, up 9 is 7, up -9 is -7 (then y + 1 = -6).
  float a[2] = {10.0f, 10.0f}, b[2] = {9.0f, -9.0f}, o[2];
  swiglu_oai_ref(a, b, 2, o);
  const float s7 = 7.0f / (1.0f + exp_ref(1.702f * -7.0f));
  EXPECT_EQ(bits(o[0]), bits(s7 * 8.0f));
  EXPECT_EQ(bits(o[1]), bits(s7 * -6.0f));
  // A very negative gate is not clamped below: its output goes to -0 or tiny values.
  float c = -50.0f, d = 1.0f, e;
  swiglu_oai_ref(&c, &d, 1, &e);
  EXPECT_LE(std::fabs(e), 1e-30f);
}

// Error of exp_ref(x) in ulps of the exact result (float64 exp is accurate to ~1e-16 relative).
double exp_ulp_error(float x) {
  const double e = std::exp(double(x));
  int ex;
  std::frexp(e, &ex);
  const double ulp = e < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, ex - 24);
  return std::fabs(double(exp_ref(x)) - e) / ulp;
}

// Proves: exp_ref is within kExpMaxUlp over a dense sweep of [-87, 88] (every 97th float, about
// 23 million points) and over EVERY float near both clamps, where results are never subnormal.
TEST(KernelRef, ExpMaxUlpError) {
  double worst = 0;
  float worst_x = 0;
  auto probe = [&](float x) {
    const double e = exp_ulp_error(x);
    if (e > worst) worst = e, worst_x = x;
  };
  for (uint32_t b = 0; b <= bits(88.0f); b += 97) probe(std::bit_cast<float>(b));
  for (uint32_t b = 0; b <= bits(87.0f); b += 97) probe(-std::bit_cast<float>(b));
  for (float x = 88.0f; x <= 88.72283f; x = std::nextafter(x, 100.0f)) {
    probe(x);
    ASSERT_TRUE(std::isfinite(exp_ref(x))) << x;
  }
  for (float x = -87.0f; x >= -87.33654f; x = std::nextafter(x, -100.0f)) {
    probe(x);
    ASSERT_GE(exp_ref(x), std::numeric_limits<float>::min()) << x;  // no subnormal results
  }
  EXPECT_LE(worst, kExpMaxUlp) << "worst at x=" << worst_x;
}

// Proves: the special cases and the documented clamps of exp_ref.
TEST(KernelRef, ExpSpecialCases) {
  EXPECT_TRUE(std::isnan(exp_ref(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_ref(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp_ref(INFINITY), INFINITY);
  EXPECT_EQ(bits(exp_ref(-INFINITY)), bits(0.0f));
  EXPECT_EQ(exp_ref(0.0f), 1.0f);
  EXPECT_EQ(exp_ref(-0.0f), 1.0f);
  EXPECT_EQ(exp_ref(1.0f), float(M_E));  // correctly rounded here
  EXPECT_EQ(exp_ref(std::nextafter(88.72283f, 100.0f)), INFINITY);
  EXPECT_TRUE(std::isfinite(exp_ref(88.72283f)));
  EXPECT_GT(exp_ref(88.72283f), 3.4e38f);
  EXPECT_EQ(bits(exp_ref(std::nextafter(-87.33654f, -100.0f))), bits(0.0f));
  EXPECT_GE(exp_ref(-87.33654f), std::numeric_limits<float>::min());
  EXPECT_EQ(bits(exp_ref(-1000.0f)), bits(0.0f));
  EXPECT_EQ(exp_ref(1000.0f), INFINITY);
}

// Proves: activation quantization rounds half to EVEN (nearbyint, as SIMD rounding does):
// with amax = 127 the scale is exactly 1, so x itself is rounded. A zero block gives d = 0 and
// q = 0 (no NaN from 0/0), and each block gets its own scale.
TEST(KernelRef, QuantizeActQ8RoundsHalfToEven) {
  float x[64] = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -127, 3.5f, -3.5f, 0.49f};
  const int8_t want[12] = {127, 0, 2, 2, 0, -2, -2, 126, -127, 4, -4, 0};
  x[40] = -3.0f;  // second block: amax 3, d = 3/127
  ActQ8 q[2];
  quantize_act_q8(x, q, 64);
  EXPECT_EQ(q[0].d, 1.0f);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(q[0].qs[i], want[i]) << "i=" << i;
  for (int i = 12; i < 32; ++i) EXPECT_EQ(q[0].qs[i], 0);
  EXPECT_EQ(q[1].d, 3.0f / 127.0f);
  EXPECT_EQ(q[1].qs[8], -127);
  float zero[32] = {};
  ActQ8 z;
  quantize_act_q8(zero, &z, 32);
  EXPECT_EQ(bits(z.d), bits(0.0f));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(z.qs[i], 0);
}

// Proves: Q8_0 quantize/dequantize of a hand-computed block: d = 127/127 = 1 (f16 0x3c00) and
// the WEIGHT quantizer rounds half AWAY from zero (roundf, as the ecosystem's reference does,
// unlike quantize_act_q8); a zero block stays zero.
TEST(KernelRef, Q8_0KnownBlock) {
  float x[64] = {127,    -127,    0.5f,  -0.5f,  1.5f, 2.5f, -2.5f, 0,
                 100.4f, -100.6f, 63.5f, -63.5f, 1,    -1,   0.49f, 126.5f};
  for (int i = 16; i < 32; ++i) x[i] = float(i - 8);
  const int8_t want[16] = {127, -127, 1, -1, 2, 3, -3, 0, 100, -101, 64, -64, 1, -1, 0, 127};
  BlockQ8_0 b[2];
  quantize_row(TensorType::Q8_0, x, b, 64);
  EXPECT_EQ(b[0].d, 0x3c00);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[0].qs[i], i < 16 ? want[i] : i - 8) << "i=" << i;
  EXPECT_EQ(b[1].d, 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[1].qs[i], 0);
  float back[64];
  dequantize_row(TensorType::Q8_0, b, back, 64);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], float(b[0].qs[i]));
  for (int i = 32; i < 64; ++i) EXPECT_EQ(bits(back[i]), bits(0.0f));
}

// Proves: Q4_0 of a hand-computed block. The first element of largest magnitude, m = -8, gives
// d = m / -8 = 1; q = min(15, trunc(x + 8.5)), so halves round up and +8 clamps to 7; nibbles
// pack q[i] low and q[i+16] high. The negated block has m = +8, d = -1 and the same nibbles.
TEST(KernelRef, Q4_0KnownBlock) {
  const float x[32] = {-8, 8,  0.5f,  -0.5f,  2.5f, -2.5f, 7.4f, 0,     1.49f, -7.6f, 3,
                       -3, 5,  -5,    6,      -6,   1,     -1,   2,     -2,    4,     -4,
                       7,  -7, 0.25f, -0.25f, 1.5f, -1.5f, 3.5f, -3.5f, 6.5f,  -6.5f};
  const float deq[32] = {-8, 7,  1, 0,  3, -2, 7, 0,  1, -8, 3, -3, 5, -5, 6, -6,
                         1,  -1, 2, -2, 4, -4, 7, -7, 0, 0,  2, -1, 4, -3, 7, -6};
  const uint8_t qs[16] = {0x90, 0x7f, 0xa9, 0x68, 0xcb, 0x46, 0xff, 0x18,
                          0x89, 0x80, 0xab, 0x75, 0xcd, 0x53, 0xfe, 0x22};
  for (float sign : {1.0f, -1.0f}) {
    float xs[32], back[32];
    for (int i = 0; i < 32; ++i) xs[i] = sign * x[i];
    BlockQ4_0 b;
    quantize_row(TensorType::Q4_0, xs, &b, 32);
    EXPECT_EQ(b.d, sign > 0 ? 0x3c00 : 0xbc00);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(b.qs[i], qs[i]) << "sign=" << sign << " i=" << i;
    dequantize_row(TensorType::Q4_0, &b, back, 32);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], sign * deq[i]) << "sign=" << sign;
  }
}

// Random blocks spanning 2^-10 .. 2^9 in magnitude (plus a zero block) for the round trips.
std::vector<float> quant_input(uint64_t seed, size_t nb) {
  SplitMix64 rng(seed);
  std::vector<float> x = rand_vec(rng, nb * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= std::ldexp(1.0f, int(i / 32) % 20 - 10);
  for (int i = 0; i < 32; ++i) x[32 + i] = 0;
  return x;
}

// Proves: Q8_0 round trip error. The codes are chosen with the unrounded d = amax/127 (error
// <= d/2 plus the rounding of x * (1/d), 127 * 2.01u in units of d) but stored with d16 =
// f16(d), which adds |q| |d - d16| <= 127 |d - d16|; d16 * q is exact in float.
TEST(KernelRef, Q8_0RoundTripErrorBound) {
  const size_t nb = 64;
  const std::vector<float> x = quant_input(10, nb);
  std::vector<BlockQ8_0> b(nb);
  std::vector<float> back(nb * 32);
  quantize_row(TensorType::Q8_0, x.data(), b.data(), nb * 32);
  dequantize_row(TensorType::Q8_0, b.data(), back.data(), nb * 32);
  for (size_t k = 0; k < nb; ++k) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[k * 32 + i]));
    const double d = amax / 127.0f, d16 = fp16_to_float_compute(b[k].d);
    ASSERT_EQ(b[k].d, float_to_fp16(float(d)));
    for (int i = 0; i < 32; ++i) {
      const double bound = d * (0.5 + 127 * 2.01 * kU) + 127 * std::fabs(d - d16);
      ASSERT_LE(std::fabs(double(x[k * 32 + i]) - back[k * 32 + i]), bound) << k << " " << i;
    }
  }
}

// Proves: Q4_0 round trip error. In units of |d| = |m|/8 the code is round-half-up of x/d,
// error <= 1/2, except x/d >= 7.5 which clamps to 7 (error <= 1); x * id and + 8.5 round
// (<= 8 * 2.01u + 16.5u); storing d as f16 adds 8 |d - d16|.
TEST(KernelRef, Q4_0RoundTripErrorBound) {
  const size_t nb = 64;
  const std::vector<float> x = quant_input(11, nb);
  std::vector<BlockQ4_0> b(nb);
  std::vector<float> back(nb * 32);
  quantize_row(TensorType::Q4_0, x.data(), b.data(), nb * 32);
  dequantize_row(TensorType::Q4_0, b.data(), back.data(), nb * 32);
  for (size_t k = 0; k < nb; ++k) {
    float m = 0;
    for (int i = 0; i < 32; ++i)
      if (std::fabs(x[k * 32 + i]) > std::fabs(m)) m = x[k * 32 + i];
    const double d = m / -8.0f, d16 = fp16_to_float_compute(b[k].d);
    ASSERT_EQ(b[k].d, float_to_fp16(float(d)));
    for (int i = 0; i < 32; ++i) {
      const double xd = d != 0 ? x[k * 32 + i] / d : 0;
      const double units = (xd > 7.5 - 1e-5 ? 1.0 : 0.5) + 8 * 2.01 * kU + 16.5 * kU;
      const double bound = std::fabs(d) * units + 8 * std::fabs(d - d16);
      ASSERT_LE(std::fabs(double(x[k * 32 + i]) - back[k * 32 + i]), bound) << k << " " << i;
    }
  }
}

}  // namespace
}  // namespace tzero
