// The Gated DeltaNet kernels (kernels/delta_net.h, delta-v1): every kernel set's dot products
// give the scalar reference's bits, a split of the state's rows or of the convolution's
// channels changes nothing, the recurrence's order is the one the header writes, and log_ref
// and softplus_ref are accurate. Bits are compared with memcmp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/delta_net.h"
#include "kernels/dot.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"
#include "kernels/ssm_scan.h"

namespace tzero {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// A few tokens of one head: the state and outputs after each.
struct HeadRun {
  std::vector<float> state, out;
};

HeadRun run_head(size_t d_k, size_t d_v, size_t n_tok, DotF32Fn dot, size_t rows_per_call) {
  HeadRun r;
  r.state = random_floats(d_v * d_k, 1, -0.5f, 0.5f);
  for (size_t t = 0; t < n_tok; ++t) {
    std::vector<float> q = random_floats(d_k, 10 + uint32_t(t)),
                       k = random_floats(d_k, 20 + uint32_t(t));
    const std::vector<float> v = random_floats(d_v, 30 + uint32_t(t));
    l2norm_ref(q.data(), d_k, 1e-6f, dot);
    l2norm_ref(k.data(), d_k, 1e-6f, dot);
    std::vector<float> out(d_v);
    const float g = -0.05f * float(t + 1), beta = 0.3f + 0.1f * float(t);
    for (size_t j0 = 0; j0 < d_v; j0 += rows_per_call)
      delta_rule_rows(r.state.data(), d_k, j0, std::min(d_v, j0 + rows_per_call), q.data(),
                      k.data(), v.data(), g, beta, 0.125f, out.data(), dot);
    r.out.insert(r.out.end(), out.begin(), out.end());
  }
  return r;
}

TEST(DeltaNet, EveryKernelSetAndRowSplitGivesTheReferenceBits) {
  const HeadRun ref = run_head(64, 48, 5, dot_f32_ref, 48);
  for (const KernelSet* ks : available_kernels())
    for (size_t rows : {1, 7, 16, 48}) {
      SCOPED_TRACE(std::string(ks->name) + " rows per call " + std::to_string(rows));
      const HeadRun got = run_head(64, 48, 5, ks->dot_f32, rows);
      EXPECT_TRUE(same_bits(got.state, ref.state));
      EXPECT_TRUE(same_bits(got.out, ref.out));
    }
}

// The sets' fused row kernels (KernelSet::delta_rows: avx512) against the reference, rows of a
// multiple of 16 and not (the reference's loops), state and outputs to the bit.
TEST(DeltaNet, FusedRowKernelsGiveTheReferenceBits) {
  int checked = 0;
  for (const KernelSet* ks : available_kernels()) {
    if (!ks->delta_rows) continue;
    for (size_t d_k : {16, 128, 40}) {
      SCOPED_TRACE(std::string(ks->name) + " d_k " + std::to_string(d_k));
      const size_t d_v = 24;
      std::vector<float> S_ref = random_floats(d_v * d_k, 5, -0.5f, 0.5f), S = S_ref;
      for (uint32_t t = 0; t < 4; ++t) {
        std::vector<float> q = random_floats(d_k, 7 + t), k = random_floats(d_k, 9 + t);
        l2norm_ref(q.data(), d_k, 1e-6f, dot_f32_ref);
        l2norm_ref(k.data(), d_k, 1e-6f, dot_f32_ref);
        const std::vector<float> v = random_floats(d_v, 11 + t);
        std::vector<float> out_ref(d_v), out(d_v);
        delta_rule_ref(S_ref.data(), d_k, d_v, q.data(), k.data(), v.data(), -0.1f, 0.6f, 0.088f,
                       out_ref.data());
        ks->delta_rows(S.data(), d_k, 0, 9, q.data(), k.data(), v.data(), -0.1f, 0.6f, 0.088f,
                       out.data());
        ks->delta_rows(S.data(), d_k, 9, d_v, q.data(), k.data(), v.data(), -0.1f, 0.6f, 0.088f,
                       out.data());
        EXPECT_TRUE(same_bits(out, out_ref));
      }
      EXPECT_TRUE(same_bits(S, S_ref));
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel set of this CPU has a fused delta row kernel";
}

// The header's order, written out once more for one row: decay, dot-v1 with k, delta, update,
// dot-v1 with q, scale.
TEST(DeltaNet, RowFollowsTheWrittenOrder) {
  const size_t d_k = 40;
  std::vector<float> S = random_floats(2 * d_k, 3), q = random_floats(d_k, 4),
                     k = random_floats(d_k, 5), v = random_floats(2, 6);
  std::vector<float> want = S;
  const float g = -0.2f, beta = 0.7f, scale = 0.25f;
  float want_out[2];
  for (size_t j = 0; j < 2; ++j) {
    float* row = &want[j * d_k];
    const float decay = exp_ref(g);
    for (size_t i = 0; i < d_k; ++i) row[i] = row[i] * decay;
    const float delta = (v[j] - dot_f32_ref(row, k.data(), d_k)) * beta;
    for (size_t i = 0; i < d_k; ++i) row[i] = row[i] + k[i] * delta;
    want_out[j] = dot_f32_ref(row, q.data(), d_k) * scale;
  }
  float out[2];
  delta_rule_ref(S.data(), d_k, 2, q.data(), k.data(), v.data(), g, beta, scale, out);
  EXPECT_TRUE(same_bits(S, want));
  EXPECT_EQ(std::memcmp(out, want_out, sizeof out), 0);
}

TEST(DeltaNet, ConvolutionByChannelBlocksEqualsWhole) {
  const size_t C = 300, K = 4;
  const std::vector<float> w = random_floats(C * K, 7);
  std::vector<float> state_a = random_floats((K - 1) * C, 8), state_b = state_a;
  std::vector<float> out_a, out_b;
  for (uint32_t t = 0; t < 6; ++t) {
    const std::vector<float> x = random_floats(C, 100 + t);
    std::vector<float> a(C), b(C);
    short_conv_silu_ref(x.data(), C, w.data(), K, state_a.data(), a.data());
    for (size_t c0 = 0; c0 < C; c0 += 64)
      short_conv_silu_cols(x.data(), C, c0, std::min(C, c0 + 64), w.data(), K, state_b.data(),
                           b.data());
    out_a.insert(out_a.end(), a.begin(), a.end());
    out_b.insert(out_b.end(), b.begin(), b.end());
    // The state holds the last K - 1 inputs, oldest first.
    EXPECT_EQ(std::memcmp(&state_a[(K - 2) * C], x.data(), C * 4), 0);
  }
  EXPECT_TRUE(same_bits(out_a, out_b));
  EXPECT_TRUE(same_bits(state_a, state_b));
}

TEST(DeltaNet, ConvolutionOfOneChannelIsTheWrittenSum) {
  const size_t K = 4;
  const float w[K] = {0.5f, -0.25f, 2.0f, 1.5f};
  float state[K - 1] = {1.0f, 2.0f, 3.0f};
  const float x = 4.0f;
  float out = 0;
  short_conv_silu_ref(&x, 1, w, K, state, &out);
  float acc = 0.0f;
  acc = acc + 0.5f * 1.0f;
  acc = acc + -0.25f * 2.0f;
  acc = acc + 2.0f * 3.0f;
  acc = acc + 1.5f * 4.0f;
  EXPECT_EQ(out, silu_ref(acc));
  EXPECT_EQ(state[0], 2.0f);
  EXPECT_EQ(state[1], 3.0f);
  EXPECT_EQ(state[2], 4.0f);
}

// Fast mode's chunked form is the same math as the recurrence in other groupings: close, not
// equal (the point of the canonical order), whatever the chunk.
TEST(DeltaNet, FastChunkedFormIsTheSameMathNotTheSameBits) {
  const size_t D = 32, n = 20;
  std::vector<float> q(n * D), k(n * D), v(n * D), g(n), beta(n);
  for (size_t t = 0; t < n; ++t) {
    std::vector<float> qt = random_floats(D, 40 + uint32_t(t)),
                       kt = random_floats(D, 60 + uint32_t(t));
    l2norm_ref(qt.data(), D, 1e-6f, dot_f32_ref);
    l2norm_ref(kt.data(), D, 1e-6f, dot_f32_ref);
    std::copy(qt.begin(), qt.end(), &q[t * D]);
    std::copy(kt.begin(), kt.end(), &k[t * D]);
    const std::vector<float> vt = random_floats(D, 80 + uint32_t(t));
    std::copy(vt.begin(), vt.end(), &v[t * D]);
    g[t] = -0.02f * float(t % 5 + 1);
    beta[t] = 0.2f + 0.03f * float(t);
  }
  const std::vector<float> S0 = random_floats(D * D, 99, -0.3f, 0.3f);
  std::vector<float> S_ref = S0, out_ref(n * D);
  for (size_t t = 0; t < n; ++t)
    delta_rule_ref(S_ref.data(), D, D, &q[t * D], &k[t * D], &v[t * D], g[t], beta[t], 0.5f,
                   &out_ref[t * D]);
  bool any_bits_differ = false;
  for (size_t chunk : {1, 3, 8, 20}) {
    std::vector<float> S = S0, out(n * D);
    for (size_t c0 = 0; c0 < n; c0 += chunk) {
      const size_t m = std::min(chunk, n - c0);
      delta_chunk_fast(S.data(), D, D, m, &q[c0 * D], &k[c0 * D], D, &v[c0 * D], D, &g[c0],
                       &beta[c0], 1, 0.5f, &out[c0 * D], D, dot_f32_ref);
    }
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], out_ref[i], 1e-4f * (1.0f + std::fabs(out_ref[i]))) << "chunk " << chunk;
    for (size_t i = 0; i < S.size(); ++i)
      ASSERT_NEAR(S[i], S_ref[i], 1e-4f * (1.0f + std::fabs(S_ref[i]))) << "chunk " << chunk;
    any_bits_differ = any_bits_differ || !same_bits(out, out_ref);
  }
  EXPECT_TRUE(any_bits_differ) << "the chunked form rounds as the recurrence: nothing to show";
}

TEST(DeltaNet, LogAndSoftplusAreAccurate) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> e(-40.0f, 40.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(e(rng));
    const double want = std::log(double(x));
    const double got = log_ref(x);
    EXPECT_LE(std::fabs(got - want), 2.5e-7 * std::fmax(1.0, std::fabs(want))) << x;
  }
  EXPECT_EQ(log_ref(1.0f), 0.0f);
  EXPECT_TRUE(std::isinf(log_ref(0.0f)) && log_ref(0.0f) < 0);
  EXPECT_TRUE(std::isnan(log_ref(-1.0f)));
  EXPECT_GT(log_ref(1e-45f), -104.0f);  // subnormal
  EXPECT_EQ(softplus_ref(25.0f), 25.0f);
  for (float x : {-10.0f, -1.0f, 0.0f, 0.5f, 3.0f, 19.0f})
    EXPECT_NEAR(softplus_ref(x), std::log1p(std::exp(double(x))), 1e-6 * (1 + std::fabs(x)));
}

TEST(DeltaNet, GatesAreSoftplusTimesAAndSigmoid) {
  float a[2] = {0.3f, -2.0f}, b[2] = {0.0f, 1.0f};
  const float dt[2] = {-3.5f, 0.5f}, A[2] = {-4.0f, -1.0f};
  delta_gates_ref(a, b, dt, A, 2);
  EXPECT_EQ(a[0], softplus_ref(0.3f + -3.5f) * -4.0f);
  EXPECT_EQ(a[1], softplus_ref(-2.0f + 0.5f) * -1.0f);
  EXPECT_EQ(b[0], 0.5f);
  EXPECT_EQ(b[1], 1.0f / (1.0f + exp_ref(-1.0f)));
}

// Mamba-2's scan (mamba2-v1): the written order for one row, and any split of the rows with
// any kernel set's dot gives the reference's bits.
TEST(Mamba2Scan, RowsFollowTheWrittenOrderAndSplitFreely) {
  const size_t N = 40, P = 24;
  const std::vector<float> S0 = random_floats(P * N, 21, -0.5f, 0.5f), x = random_floats(P, 22),
                           B = random_floats(N, 23), C = random_floats(N, 24);
  const float dt_raw = -3.0f, dt_bias = 0.5f, A = -2.5f, D = 0.9f;
  std::vector<float> S_ref = S0, y_ref(P);
  ssm_scan_ref(S_ref.data(), N, P, x.data(), B.data(), C.data(), dt_raw, dt_bias, A, D,
               y_ref.data());
  // Row 3 by hand.
  const float dt = softplus_ref(dt_raw + dt_bias), dA = exp_ref(dt * A);
  std::vector<float> row(S0.begin() + 3 * N, S0.begin() + 4 * N);
  const float x_dt = x[3] * dt;
  for (size_t n = 0; n < N; ++n) {
    const float a = row[n] * dA, b = B[n] * x_dt;
    row[n] = a + b;
  }
  const float want = dot_f32_ref(row.data(), C.data(), N) + x[3] * D;
  EXPECT_EQ(std::memcmp(&want, &y_ref[3], 4), 0);
  EXPECT_EQ(std::memcmp(row.data(), &S_ref[3 * N], N * 4), 0);
  for (const KernelSet* ks : available_kernels())
    for (size_t block : {1, 5, 16}) {
      SCOPED_TRACE(std::string(ks->name) + " rows " + std::to_string(block));
      std::vector<float> S = S0, y(P);
      for (size_t p0 = 0; p0 < P; p0 += block)
        ssm_scan_rows(S.data(), N, p0, std::min(P, p0 + block), x.data(), B.data(), C.data(), dt,
                      dA, D, y.data(), ks->dot_f32);
      EXPECT_TRUE(same_bits(S, S_ref));
      EXPECT_TRUE(same_bits(y, y_ref));
    }
}

}  // namespace
}  // namespace tzero
