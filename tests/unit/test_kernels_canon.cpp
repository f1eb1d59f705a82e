// KernelCanon.*: bit tests of the canonical orders (see kernel_test_util.h).
#include "unit/kernel_test_util.h"

namespace tzero {
namespace {
// ---- Canonical orders: bit tests -----------------------------------------------------------

// Proves: dot_f32/f16/bf16_ref return exactly the bits of the documented 16-lane order for
// every length 1..300 and some long ones (tails of every size), on random data.
TEST(KernelCanon, FloatDotsMatchCanonicalOrder) {
  SplitMix64 rng(20);
  std::vector<size_t> lengths;
  for (size_t n = 1; n <= 300; ++n) lengths.push_back(n);
  for (size_t n : {511, 1000, 2048, 4099, 5632}) lengths.push_back(n);
  for (size_t n : lengths) {
    const std::vector<float> w = rand_vec(rng, n), x = rand_vec(rng, n, -3.0f, 3.0f);
    std::vector<uint16_t> h(n), bf(n);
    for (size_t k = 0; k < n; ++k) h[k] = float_to_fp16(w[k]), bf[k] = uint16_t(rng.next());
    for (auto& b : bf)
      if ((b & 0x7f80) == 0x7f80) b &= 0xbfff;  // no inf/NaN weights
    ASSERT_EQ(bits(dot_f32_ref(w.data(), x.data(), n)),
              bits(canon::dot16([&](size_t k) { return w[k]; }, x.data(), n)))
        << "f32 n=" << n;
    ASSERT_EQ(bits(dot_f16_ref(h.data(), x.data(), n)),
              bits(canon::dot16([&](size_t k) { return canon::widen_half(h[k]); }, x.data(), n)))
        << "f16 n=" << n;
    ASSERT_EQ(bits(dot_bf16_ref(bf.data(), x.data(), n)),
              bits(canon::dot16([&](size_t k) { return canon::widen_bf16(bf[k]); }, x.data(), n)))
        << "bf16 n=" << n;
  }
  EXPECT_EQ(bits(dot_f32_ref(nullptr, nullptr, 0)), bits(0.0f));  // empty: +0.0
}

// Proves: the lanes a tail does not reach keep their accumulator as it is (they are not fma'd
// with padding zeros), in the reference AND in every kernel variant this CPU runs (dot and
// gemm). All products below underflow to -0.0, so every lane is -0.0 and the canonical result
// is -0.0; a variant that pads the missing lanes with fma(0, 0, acc) turns them into +0.0 and
// returns +0.0, which a trace hash would see (found in the avx2 and avx512 kernels, fixed).
TEST(KernelCanon, UntouchedTailLanesAreNotPadded) {
  for (size_t n : {16, 17, 20, 33, 47}) {
    const std::vector<float> w(n, -1e-30f), x(n, 1e-30f);
    const std::vector<uint16_t> wb(n, float_to_bf16(-1e-30f));
    ASSERT_EQ(bits(canon::dot16([&](size_t k) { return w[k]; }, x.data(), n)), bits(-0.0f));
    for (const KernelSet* k : available_kernels()) {
      EXPECT_EQ(bits(k->dot_f32(w.data(), x.data(), n)), bits(-0.0f)) << k->name << " n=" << n;
      float y = 1.0f;
      k->gemm_bf16(reinterpret_cast<const uint8_t*>(wb.data()), n * 2, x.data(), n, 1, 1, &y, 1);
      EXPECT_EQ(bits(y), bits(-0.0f)) << k->name << " bf16 gemm n=" << n;
    }
  }
}

// Random quantized blocks over the full code range (int8 -128..127, every nibble) and scales.
template <typename Block>
std::vector<Block> rand_blocks(SplitMix64& rng, size_t nb) {
  std::vector<Block> w(nb);
  for (auto& b : w) {
    b.d = float_to_fp16(rnd(rng, -0.05f, 0.05f));
    for (auto& q : b.qs) q = static_cast<std::remove_reference_t<decltype(q)>>(rng.next());
  }
  return w;
}
std::vector<ActQ8> rand_act(SplitMix64& rng, size_t nb) {
  std::vector<ActQ8> x(nb);
  for (auto& b : x) {
    b.d = rnd(rng, 0.001f, 0.1f);
    for (auto& q : b.qs) q = int8_t(rng.next());
  }
  return x;
}

// Proves: dot_q8_0_ref and dot_q4_0_ref return exactly the bits of the documented order (exact
// int32 block sums, p = d_w d_x, 8 block lanes, tree) for 1..80 blocks and 176 blocks.
TEST(KernelCanon, QuantDotsMatchCanonicalOrder) {
  SplitMix64 rng(21);
  std::vector<size_t> counts;
  for (size_t nb = 1; nb <= 80; ++nb) counts.push_back(nb);
  counts.push_back(176);
  for (size_t nb : counts) {
    const auto w8 = rand_blocks<BlockQ8_0>(rng, nb);
    const auto w4 = rand_blocks<BlockQ4_0>(rng, nb);
    const auto x = rand_act(rng, nb);
    ASSERT_EQ(bits(dot_q8_0_ref(w8.data(), x.data(), nb * 32)),
              bits(canon::dot_blocks(w8.data(), x.data(), nb * 32)))
        << "q8_0 blocks=" << nb;
    ASSERT_EQ(bits(dot_q4_0_ref(w4.data(), x.data(), nb * 32)),
              bits(canon::dot_blocks(w4.data(), x.data(), nb * 32)))
        << "q4_0 blocks=" << nb;
  }
}

// Proves: sum_f32_ref returns exactly the bits of the 16-lane add order, lengths 1..300 and more.
TEST(KernelCanon, SumMatchesCanonicalOrder) {
  SplitMix64 rng(22);
  for (size_t n = 1; n <= 1100; n += n < 300 ? 1 : 97) {
    const std::vector<float> x = rand_vec(rng, n, -10.0f, 10.0f);
    ASSERT_EQ(bits(sum_f32_ref(x.data(), n)), bits(canon::sum16(x.data(), n))) << "n=" << n;
  }
}

// Proves: rmsnorm_ref is bit-exactly "ss in the dot order; mean = ss / float(n); scale =
// 1 / sqrtf(mean + eps); out = (x * scale) * w", also when out aliases x.
TEST(KernelCanon, RmsNormMatchesCanonicalOrder) {
  SplitMix64 rng(23);
  for (size_t n : {1, 2, 15, 16, 17, 100, 288, 2048, 5632}) {
    const std::vector<float> x = rand_vec(rng, n, -3.0f, 3.0f), w = rand_vec(rng, n);
    const float eps = 1e-6f;
    const float ss = canon::dot16([&](size_t k) { return x[k]; }, x.data(), n);
    const float scale = 1.0f / std::sqrt(ss / float(n) + eps);
    std::vector<float> out(n), alias = x;
    rmsnorm_ref(x.data(), w.data(), eps, n, out.data());
    rmsnorm_ref(alias.data(), w.data(), eps, n, alias.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(out[i]), bits((x[i] * scale) * w[i])) << "n=" << n << " i=" << i;
      ASSERT_EQ(bits(alias[i]), bits(out[i])) << "aliased, n=" << n << " i=" << i;
    }
  }
}

// Proves: the rope table holds float(cos/sin(pos * base^(-2i/n_rot))) computed in double and
// rounded once, and rope_ref applies a*c - b*s, a*s + b*c with every product rounded (no FMA),
// in both layouts, bit for bit.
TEST(KernelCanon, RopeMatchesCanonicalOrder) {
  SplitMix64 rng(24);
  for (int n_rot : {32, 128}) {
    const double base = n_rot == 32 ? 10000.0 : 1000000.0;
    const RopeTable table(n_rot, 2048, base);
    ASSERT_EQ(table.n_rot(), n_rot);
    ASSERT_EQ(table.n_pos(), 2048);
    for (int pos = 0; pos < 2048; pos += 13) {
      std::vector<float> c(n_rot / 2), s(n_rot / 2);
      for (int i = 0; i < n_rot / 2; ++i) {
        const double th = double(pos) * std::pow(base, -2.0 * i / n_rot);
        c[i] = float(std::cos(th)), s[i] = float(std::sin(th));
        ASSERT_EQ(bits(table.cos_sin(pos)[2 * i]), bits(c[i])) << pos << " " << i;
        ASSERT_EQ(bits(table.cos_sin(pos)[2 * i + 1]), bits(s[i])) << pos << " " << i;
      }
      for (bool neox : {false, true}) {
        const std::vector<float> x0 = rand_vec(rng, size_t(n_rot));
        std::vector<float> x = x0, want = x0;
        for (int i = 0; i < n_rot / 2; ++i) {
          const int ia = neox ? i : 2 * i, ib = neox ? i + n_rot / 2 : 2 * i + 1;
          const float ac = x0[ia] * c[i], bs = x0[ib] * s[i], as = x0[ia] * s[i],
                      bc = x0[ib] * c[i];
          want[ia] = ac - bs;
          want[ib] = as + bc;
        }
        rope_ref(x.data(), pos, table, neox);
        ASSERT_EQ(std::memcmp(x.data(), want.data(), x.size() * sizeof(float)), 0)
            << "n_rot=" << n_rot << " pos=" << pos << " neox=" << neox;
      }
    }
  }
}

// Proves: attention_head_ref is bit-exactly the documented attn-v2 order (scores in the dot
// order times scale, max, exp_ref of the shifted scores; per block of kAttnBlock positions the
// 16-lane sum and the sequential fma over its positions from +0.0; the blocks' sums added left to
// right; one division), for many lengths (one, two and three blocks) and a strided K/V layout.
TEST(KernelCanon, AttentionMatchesCanonicalOrder) {
  SplitMix64 rng(25);
  const size_t hd = 48, stride = 80;
  ASSERT_EQ(kAttnBlock, 256u);  // a change of the block size is a new version of attn
  for (size_t n_kv = 1; n_kv <= 700; n_kv += n_kv < 40 ? 1 : 37) {
    const std::vector<float> q = rand_vec(rng, hd, -3.0f, 3.0f);
    const std::vector<float> k = rand_vec(rng, n_kv * stride), v = rand_vec(rng, n_kv * stride);
    const float scale = 0.144f;
    std::vector<float> e(n_kv), scratch(n_kv), out(hd), want(hd);
    float m = -INFINITY;
    for (size_t t = 0; t < n_kv; ++t) {
      e[t] = canon::dot16([&](size_t i) { return q[i]; }, &k[t * stride], hd) * scale;
      if (e[t] > m) m = e[t];
    }
    for (size_t t = 0; t < n_kv; ++t) e[t] = canon::exp(e[t] - m);
    float z = 0.0f;
    std::vector<float> o(hd, 0.0f);
    for (size_t t0 = 0; t0 < n_kv; t0 += 256) {
      const size_t n = std::min<size_t>(256, n_kv - t0);
      const float z_j = canon::sum16(&e[t0], n);
      z = t0 == 0 ? z_j : z + z_j;
      for (size_t d = 0; d < hd; ++d) {
        float o_j = 0.0f;
        for (size_t t = t0; t < t0 + n; ++t) o_j = std::fma(e[t], v[t * stride + d], o_j);
        o[d] = t0 == 0 ? o_j : o[d] + o_j;
      }
    }
    for (size_t d = 0; d < hd; ++d) want[d] = o[d] / z;
    const float *kp = k.data(), *vp = v.data();
    attention_head_ref(q.data(), single_block(&kp, stride), single_block(&vp, stride), n_kv, hd,
                       scale, scratch.data(), out.data());
    ASSERT_EQ(std::memcmp(out.data(), want.data(), hd * sizeof(float)), 0) << "n_kv=" << n_kv;
  }
}

// Proves: exp_ref follows exp-v1 operation for operation (bit-exact over a sweep of the whole
// float bit space, every 251st pattern, which includes NaNs, infinities and both clamps), and
// silu_ref / swiglu_ref follow silu-v1 on top of it.
TEST(KernelCanon, ExpSiluSwigluMatchCanonicalDefinition) {
  for (uint64_t b = 0; b <= 0xffffffffull; b += 251) {
    const float x = std::bit_cast<float>(uint32_t(b));
    const float got = exp_ref(x), want = canon::exp(x);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << x;
      continue;
    }
    ASSERT_EQ(bits(got), bits(want)) << "x=" << x;
  }
  SplitMix64 rng(26);
  const std::vector<float> g = rand_vec(rng, 4096, -95.0f, 95.0f), up = rand_vec(rng, 4096);
  std::vector<float> out(g.size());
  swiglu_ref(g.data(), up.data(), g.size(), out.data());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(bits(silu_ref(g[i])), bits(canon::silu(g[i]))) << g[i];
    ASSERT_EQ(bits(out[i]), bits(canon::silu(g[i]) * up[i])) << g[i];
  }
}

// Proves: gelu_ref / geglu_ref follow gelu-v1 (on exp-v1), over the range where its tails
// saturate and beyond, and are within 2e-6 relative (more in the tail, where e^(-2u) amplifies
// the rounding of 2u) of 0.5 x (1 + tanh(u)) in double for
// |x| <= 10, computed as x / (1 + e^(-2u)) (the same function; tanh rounds to -1 in double
// where the true value is still about -1e-20). The cubic is in float: not to the last ulp.
TEST(KernelCanon, GeluGegluMatchCanonicalDefinition) {
  SplitMix64 rng(28);
  const std::vector<float> g = rand_vec(rng, 4096, -40.0f, 40.0f), up = rand_vec(rng, 4096);
  std::vector<float> out(g.size());
  geglu_ref(g.data(), up.data(), g.size(), out.data());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(bits(gelu_ref(g[i])), bits(canon::gelu(g[i]))) << g[i];
    ASSERT_EQ(bits(out[i]), bits(canon::gelu(g[i]) * up[i])) << g[i];
  }
  for (float x = -10.0f; x <= 10.0f; x += 0.001953125f) {
    const double xd = x, u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
    const double want = xd / (1.0 + std::exp(-2.0 * u));
    // In the tail e^(-2u) amplifies the float roundings of 2u (up to 4 ulps).
    const double rel = 2e-6 + 2.4e-7 * std::fabs(2.0 * u);
    ASSERT_NEAR(gelu_ref(x), want, rel * std::fabs(want) + 1e-37) << x;
  }
  EXPECT_EQ(gelu_ref(-100.0f), 0.0f);
  EXPECT_EQ(gelu_ref(100.0f), 100.0f);
  EXPECT_TRUE(std::isnan(gelu_ref(NAN)));
}

// Proves: softcap_ref follows softcap-v1 operation for operation, saturates at +-cap, keeps
// the sign, and is within 1e-6 relative (plus 2e-7 absolute: the 1 - e near 0) of
// cap * tanh(x / cap) in double.
TEST(KernelCanon, SoftcapMatchesCanonicalDefinition) {
  SplitMix64 rng(29);
  for (float cap : {50.0f, 30.0f, 1.0f}) {
    const std::vector<float> x = rand_vec(rng, 4096, -4.0f * cap, 4.0f * cap);
    for (float v : x) {
      const float y = v / cap, a = std::fabs(y), e = canon::exp(-(a + a));
      const float t = (1.0f - e) / (1.0f + e);
      ASSERT_EQ(bits(softcap_ref(v, cap)), bits(cap * (y < 0 ? -t : t))) << v;
      const double want = double(cap) * std::tanh(double(v) / cap);
      ASSERT_NEAR(softcap_ref(v, cap), want, 1e-6 * std::fabs(want) + 2e-7 * cap) << v;
    }
    EXPECT_EQ(softcap_ref(1e30f, cap), cap);
    EXPECT_EQ(softcap_ref(-1e30f, cap), -cap);
    EXPECT_EQ(softcap_ref(0.0f, cap), 0.0f);
  }
}

// Proves: quantize_act_q8 is bit-exactly "amax, d = amax/127, id = 1/d (0 for d = 0),
// q = nearbyint(x * id)", block by block; and, as a tolerance check, |x - d q| <= d/2 per element
// up to the rounding of x * id (<= 127 * 2.01u in units of d), with the largest element at +-127.
TEST(KernelCanon, QuantizeActQ8MatchesCanonical) {
  SplitMix64 rng(27);
  const size_t n = 32 * 100;
  std::vector<float> x = rand_vec(rng, n);
  for (size_t i = 0; i < n; ++i) x[i] *= std::ldexp(1.0f, int(i / 32) % 30 - 15);
  std::vector<ActQ8> q(n / 32);
  quantize_act_q8(x.data(), q.data(), n);
  for (size_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    ASSERT_EQ(bits(q[b].d), bits(d));
    int qmax = 0;
    for (int i = 0; i < 32; ++i) {
      ASSERT_EQ(q[b].qs[i], int8_t(std::nearbyint(x[b * 32 + i] * id))) << b << " " << i;
      const double err = std::fabs(double(x[b * 32 + i]) - double(d) * q[b].qs[i]);
      ASSERT_LE(err, double(d) * (0.5 + 127 * 2.01 * kU)) << "block " << b << " i=" << i;
      qmax = std::max(qmax, std::abs(int(q[b].qs[i])));
    }
    EXPECT_EQ(qmax, 127);
  }
}

// Orders a careless change might substitute; each must differ from the kernel somewhere.
float seq_fma(const float* w, const float* x, size_t n) {
  float a = 0.0f;
  for (size_t k = 0; k < n; ++k) a = std::fma(w[k], x[k], a);
  return a;
}
float lanes8(const float* w, const float* x, size_t n) {
  float acc[8] = {};
  for (size_t k = 0; k < n; ++k) acc[k % 8] = std::fma(w[k], x[k], acc[k % 8]);
  return canon::tree8(acc);
}
float lanes16_seq_reduce(const float* w, const float* x, size_t n) {
  float acc[16] = {};
  for (size_t k = 0; k < n; ++k) acc[k % 16] = std::fma(w[k], x[k], acc[k % 16]);
  float r = 0.0f;
  for (float a : acc) r += a;
  return r;
}
float lanes16_mul_add(const float* w, const float* x, size_t n) {  // no fma: two roundings
  float acc[16] = {};
  for (size_t k = 0; k < n; ++k) acc[k % 16] = acc[k % 16] + w[k] * x[k];
  return canon::tree16(acc);
}

// Proves: the bit tests above can detect an order change: every alternative order (sequential,
// 8 lanes, a sequential lane reduction, unfused multiply-add; a sequential sum; one block lane)
// gives different bits from the kernel on some random input, while the canonical
// re-implementation never does.
TEST(KernelCanon, NonCanonicalOrdersAreDetected) {
  using Alt = float (*)(const float*, const float*, size_t);
  const std::pair<const char*, Alt> alts[] = {{"sequential fma", seq_fma},
                                              {"8 lanes", lanes8},
                                              {"16 lanes, sequential reduce", lanes16_seq_reduce},
                                              {"16 lanes, mul then add", lanes16_mul_add}};
  for (const auto& [name, alt] : alts) {
    SplitMix64 rng(28);
    bool differs = false;
    for (int trial = 0; trial < 200 && !differs; ++trial) {
      const size_t n = 300;
      const std::vector<float> w = rand_vec(rng, n), x = rand_vec(rng, n);
      const float got = dot_f32_ref(w.data(), x.data(), n);
      ASSERT_EQ(bits(got), bits(canon::dot16([&](size_t k) { return w[k]; }, x.data(), n)));
      differs = bits(got) != bits(alt(w.data(), x.data(), n));
    }
    EXPECT_TRUE(differs) << name << " was never distinguished from the canonical order";
  }
  // The plain sequential sum also differs from sum_f32_ref.
  SplitMix64 rng(29);
  bool differs = false;
  for (int trial = 0; trial < 200 && !differs; ++trial) {
    const std::vector<float> x = rand_vec(rng, 300);
    float seq = 0.0f;
    for (float v : x) seq += v;
    differs = bits(seq) != bits(sum_f32_ref(x.data(), x.size()));
  }
  EXPECT_TRUE(differs) << "sequential sum never distinguished from sum_f32_ref";
  // And summing the quantized block terms in one lane differs from dot_q8_0_ref.
  differs = false;
  for (int trial = 0; trial < 200 && !differs; ++trial) {
    const auto w = rand_blocks<BlockQ8_0>(rng, 64);
    const auto x = rand_act(rng, 64);
    float seq = 0.0f;
    for (size_t b = 0; b < 64; ++b) {
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) s += int32_t(w[b].qs[i]) * x[b].qs[i];
      seq = std::fma(canon::widen_half(w[b].d) * x[b].d, float(s), seq);
    }
    differs = bits(seq) != bits(dot_q8_0_ref(w.data(), x.data(), 64 * 32));
  }
  EXPECT_TRUE(differs) << "one-lane block order never distinguished from dot_q8_0_ref";
}

}  // namespace
}  // namespace tzero
