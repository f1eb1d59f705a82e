// Every kernel variant this CPU can run (avx2, avx512, amx; amx-emu; on aarch64 neon and
// neon-dotprod) returns exactly the bits of
// the scalar reference (DETERMINISM.md L4), on random inputs of many shapes: odd sizes, tails,
// every weight type, batches of several tokens. Compares bits with memcmp, never a tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/attention_heads.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "support/test_support.h"

#if defined(__x86_64__)
#include "kernels/x86/decode_rows.h"
#endif

namespace {

using tzero::KernelSet;
using tzero::TensorType;

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

std::vector<const KernelSet*> variants() {
  auto all = tzero::available_kernels();
  std::vector<const KernelSet*> v(all.begin() + 1, all.end());  // all but the scalar reference
  // The AMX kernels over the tile emulator where the avx512 set runs (never "auto"; the real
  // AMX set is in available_kernels() where the CPU has it).
  try {
    v.push_back(&tzero::select_kernels("amx-emu"));
  } catch (const tzero::Error&) {
  }
  return v;
}

// N rows of K random weights quantized to `type` (w holds the bytes the Matrix points at).
tzero::Matrix random_matrix(TensorType type, size_t N, size_t K, uint32_t seed,
                            std::vector<uint8_t>& w) {
  const std::vector<float> wf = tzero::test::random_floats(N * K, seed);
  const size_t rb = tzero::row_bytes(type, K);
  w.assign(N * rb, 0);
  for (size_t r = 0; r < N; ++r) tzero::quantize_row(type, &wf[r * K], &w[r * rb], K);
  return tzero::Matrix{type, w.data(), int64_t(N), int64_t(K), rb};
}

// Every SIMD variant's matmul of m with the T activation rows x equals the scalar one's bits.
void expect_matmul_variants_equal(tzero::ThreadPool& pool, const tzero::Matrix& m,
                                  const std::vector<float>& x, size_t T, const std::string& what) {
  const size_t N = size_t(m.n_rows);
  tzero::MatmulScratch scratch;
  std::vector<float> ref(T * N), got(T * N);
  tzero::matmul(pool, tzero::scalar_kernels(), m, x.data(), T, ref.data(), scratch);
  for (const KernelSet* k : variants()) {
    std::fill(got.begin(), got.end(), -1.0f);
    tzero::matmul(pool, *k, m, x.data(), T, got.data(), scratch);
    EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size())) << k->name << " " << what;
  }
}
void expect_matmul_variants_equal(tzero::ThreadPool& pool, const tzero::Matrix& m, size_t T,
                                  uint32_t seed, const std::string& what) {
  expect_matmul_variants_equal(pool, m, tzero::test::random_floats(T * size_t(m.n_cols), seed), T,
                               what);
}

void report_variants() {
  static bool once = [] {
    std::string names;
    for (const KernelSet* k : tzero::available_kernels()) names += std::string(" ") + k->name;
    std::printf("kernel variants on this machine:%s\n", names.c_str());
    return true;
  }();
  (void)once;
}

}  // namespace

TEST(KernelVariants, MatmulEveryTypeEqualsScalarBits) {
  report_variants();
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  tzero::ThreadPool pool(2);
  const TensorType types[] = {
      TensorType::F32,    TensorType::F16,   TensorType::BF16, TensorType::Q8_0,
      TensorType::Q4_0,   TensorType::Q4_1,  TensorType::Q5_0, TensorType::Q5_1,
      TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q4_K, TensorType::Q5_K,
      TensorType::Q6_K,   TensorType::Q2_K,  TensorType::Q3_K, TensorType::IQ4_XS};
  uint32_t seed = 1;
  for (TensorType type : types) {
    const size_t block = tzero::traits(type).block_size;
    for (size_t n_cols : {32, 64, 96, 160, 256, 288, 1056, 512, 2304, 4352}) {
      if (n_cols % block) continue;
      for (size_t n_cols_f : {n_cols, n_cols + (block == 1 ? 7 : 0)}) {
        const size_t K = n_cols_f;
        std::vector<uint8_t> w;
        const tzero::Matrix m = random_matrix(type, 13, K, seed++, w);
        expect_matmul_variants_equal(
            pool, m, 5, seed++, std::string(tzero::traits(type).name) + " K=" + std::to_string(K));
      }
    }
  }
}

TEST(KernelVariants, DotRmsnormSwigluGegluEqualScalarBitsForAllLengths) {
  report_variants();
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  const KernelSet& s = tzero::scalar_kernels();
  for (size_t n = 1; n <= 300; ++n) {
    const auto a = tzero::test::random_floats(n, uint32_t(n)),
               b = tzero::test::random_floats(n, uint32_t(n + 1000));
    const auto w = tzero::test::random_floats(n, uint32_t(n + 2000));
    const auto g = tzero::test::random_floats(n, uint32_t(n + 3000), 6.0f);  // reaches silu's tails
    std::vector<float> r1(n), r2(n), s1(n), s2(n), e1(n), e2(n);
    s.rmsnorm(a.data(), w.data(), 1e-5f, n, r1.data());
    s.swiglu(g.data(), b.data(), n, s1.data());
    s.geglu(g.data(), b.data(), n, e1.data());
    for (const KernelSet* k : variants()) {
      const float d1 = s.dot_f32(a.data(), b.data(), n), d2 = k->dot_f32(a.data(), b.data(), n);
      EXPECT_TRUE(same_bits(&d1, &d2, 1)) << k->name << " dot n=" << n;
      k->rmsnorm(a.data(), w.data(), 1e-5f, n, r2.data());
      EXPECT_TRUE(same_bits(r1.data(), r2.data(), n)) << k->name << " rmsnorm n=" << n;
      k->swiglu(g.data(), b.data(), n, s2.data());
      EXPECT_TRUE(same_bits(s1.data(), s2.data(), n)) << k->name << " swiglu n=" << n;
      k->geglu(g.data(), b.data(), n, e2.data());
      EXPECT_TRUE(same_bits(e1.data(), e2.data(), n)) << k->name << " geglu n=" << n;
    }
  }
}

TEST(KernelVariants, SwigluGegluSpecialValuesEqualScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> g = {0.0f,   -0.0f,  1e-30f,  -1e-30f, 87.0f, -87.0f, 88.7f,  -88.8f, 89.0f,
                          -89.0f, 100.0f, -100.0f, inf,     -inf,  20.5f,  -20.5f, 3.0f};
  std::vector<float> u(g.size(), 1.5f), r1(g.size()), r2(g.size());
  tzero::scalar_kernels().swiglu(g.data(), u.data(), g.size(), r1.data());
  for (const KernelSet* k : variants()) {
    k->swiglu(g.data(), u.data(), g.size(), r2.data());
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_TRUE(same_bits(&r1[i], &r2[i], 1)) << k->name << " x=" << g[i];
  }
  tzero::scalar_kernels().geglu(g.data(), u.data(), g.size(), r1.data());
  for (const KernelSet* k : variants()) {
    k->geglu(g.data(), u.data(), g.size(), r2.data());
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_TRUE(same_bits(&r1[i], &r2[i], 1)) << k->name << " geglu x=" << g[i];
  }
}

// Rows [0, n) of a contiguous cache (rows `stride` floats apart) copied into blocks of bs
// positions, the blocks in reverse order in memory when `reverse` (a paged cache's scattered
// blocks); `rows` views them.
struct PagedCopy {
  std::vector<float> data;
  std::vector<const float*> blocks;
  tzero::KvRows rows;
  PagedCopy(const std::vector<float>& src, size_t n, size_t stride, size_t bs, bool reverse) {
    const size_t n_blocks = (n + bs - 1) / bs;
    data.resize(n_blocks * bs * stride);
    blocks.resize(n_blocks);
    for (size_t b = 0; b < n_blocks; ++b) {
      const size_t slot = reverse ? n_blocks - 1 - b : b;
      blocks[b] = &data[slot * bs * stride];
      for (size_t t = b * bs; t < std::min(n, (b + 1) * bs); ++t)
        std::copy_n(&src[t * stride], stride, &data[(slot * bs + t % bs) * stride]);
    }
    rows = tzero::KvRows{blocks.data(), bs, stride, 0};
  }
};

// attn-v2 through every kernel set (the scalar one too: attention_heads over its pieces) equals
// attention_head_ref per head: head sizes with and without a 16 tail, one to three position
// blocks, GQA groups of 1 to 8 heads (every head tile and its tails), the rows contiguous or cut
// into paged blocks scattered in memory in reverse order.
TEST(KernelVariants, AttentionEqualsScalarBits) {
  uint32_t seed = 7;
  for (size_t head_dim : {8, 20, 64, 80, 128}) {
    for (size_t n_kv : {1, 2, 7, 16, 33, 100, 256, 257, 600}) {
      for (size_t n_q : {1, 3, 4, 5, 8}) {
        if (n_q != 1 && n_q != 5 && head_dim != 64 && n_kv != 257) continue;  // keep it short
        const size_t stride = head_dim * 3;
        const auto q = tzero::test::random_floats(n_q * head_dim, seed++, 2.0f);
        const auto kc = tzero::test::random_floats(n_kv * stride, seed++, 2.0f);
        const auto vc = tzero::test::random_floats(n_kv * stride, seed++);
        std::vector<float> scratch(n_kv), ref(n_q * head_dim), got(n_q * head_dim);
        const float scale = 0.125f;
        const float *kp = kc.data(), *vp = vc.data();
        for (size_t g = 0; g < n_q; ++g)
          tzero::attention_head_ref(&q[g * head_dim], tzero::single_block(&kp, stride),
                                    tzero::single_block(&vp, stride), n_kv, head_dim, scale,
                                    scratch.data(), &ref[g * head_dim]);
        for (size_t block : {size_t(0), size_t(1), size_t(3), size_t(16)}) {
          const size_t bs = block ? block : n_kv;  // 0: one contiguous block
          const PagedCopy kpaged(kc, n_kv, stride, bs, block != 0);
          const PagedCopy vpaged(vc, n_kv, stride, bs, block != 0);
          const tzero::KvRows &kr = kpaged.rows, &vr = vpaged.rows;
          for (const KernelSet* k : tzero::available_kernels()) {
            tzero::AttnScratch sc;
            std::fill(got.begin(), got.end(), -1.0f);
            tzero::attention_heads(*k, q.data(), head_dim, n_q, kr, vr, n_kv, head_dim, scale, sc,
                                   got.data(), head_dim);
            EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size()))
                << k->name << " head_dim=" << head_dim << " n_kv=" << n_kv << " n_q=" << n_q
                << " block=" << block;
          }
        }
      }
    }
  }
}

// attn-v2's SLIDING WINDOW: a window's view (KvRows::from) of a paged cache, starting anywhere
// in a block, gives through every kernel set the bits of attention_head_ref over a contiguous
// copy of just the window's rows (blocks of 256 counted from the window's start: a 300-wide
// window has two), so where the window falls in the cache never changes them.
TEST(KernelVariants, SlidingWindowViewEqualsReferenceOverTheWindowAlone) {
  const size_t head_dim = 64, stride = head_dim * 2, n_q = 4, bs = 16, n_pos = 700;
  const auto q = tzero::test::random_floats(n_q * head_dim, 101, 2.0f);
  const auto kc = tzero::test::random_floats(n_pos * stride, 102, 2.0f);
  const auto vc = tzero::test::random_floats(n_pos * stride, 103);
  const PagedCopy kpaged(kc, n_pos, stride, bs, true), vpaged(vc, n_pos, stride, bs, true);
  const tzero::KvRows &kr = kpaged.rows, &vr = vpaged.rows;
  for (const auto& [lo, n] : std::vector<std::pair<size_t, size_t>>{
           {0, 12}, {5, 12}, {16, 12}, {399, 300}, {400, 300}, {123, 577}}) {
    const float *kp = &kc[lo * stride], *vp = &vc[lo * stride];
    std::vector<float> scratch(n), ref(n_q * head_dim), got(n_q * head_dim);
    for (size_t g = 0; g < n_q; ++g)
      tzero::attention_head_ref(&q[g * head_dim], tzero::single_block(&kp, stride),
                                tzero::single_block(&vp, stride), n, head_dim, 0.125f,
                                scratch.data(), &ref[g * head_dim]);
    for (const KernelSet* k : tzero::available_kernels()) {
      tzero::AttnScratch sc;
      std::fill(got.begin(), got.end(), -1.0f);
      tzero::attention_heads(*k, q.data(), head_dim, n_q, kr.from(lo), vr.from(lo), n, head_dim,
                             0.125f, sc, got.data(), head_dim);
      EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size()))
          << k->name << " window [" << lo << ", " << lo + n << ")";
    }
  }
}

// Soft-capped attention (Gemma 2): attention_heads with a cap through every kernel set gives
// attention_head_ref's bits with the same cap, over one and three position blocks, paged; and
// the cap changes the bits (so it is applied).
TEST(KernelVariants, SoftCappedAttentionEqualsReference) {
  const size_t head_dim = 64, stride = head_dim, n_q = 2;
  for (size_t n_kv : {size_t(40), size_t(600)}) {
    const auto q = tzero::test::random_floats(n_q * head_dim, 201, 6.0f);
    const auto kc = tzero::test::random_floats(n_kv * stride, 202, 6.0f);
    const auto vc = tzero::test::random_floats(n_kv * stride, 203);
    const PagedCopy kp(kc, n_kv, stride, 16, true), vp(vc, n_kv, stride, 16, true);
    std::vector<float> scratch(n_kv), ref(n_q * head_dim), uncapped(n_q * head_dim);
    for (size_t g = 0; g < n_q; ++g) {
      tzero::attention_head_ref(&q[g * head_dim], kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                                scratch.data(), &ref[g * head_dim], 5.0f);
      tzero::attention_head_ref(&q[g * head_dim], kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                                scratch.data(), &uncapped[g * head_dim]);
    }
    EXPECT_FALSE(same_bits(ref.data(), uncapped.data(), ref.size())) << "the cap did nothing";
    for (const KernelSet* k : tzero::available_kernels()) {
      tzero::AttnScratch sc;
      std::vector<float> got(n_q * head_dim, -1.0f);
      tzero::attention_heads(*k, q.data(), head_dim, n_q, kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                             sc, got.data(), head_dim, 5.0f);
      EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size())) << k->name << " n_kv=" << n_kv;
    }
  }
}

// Attention sinks (gpt-oss, attn-v2 SINK): attention_heads with a sink per head through every
// kernel set gives attention_head_ref's bits with the same sinks, over one and three position
// blocks, paged, with a sink below, inside and above the scores' range (above: it is the max);
// the sink changes the bits (so it is applied), and a sink of -inf is no sink.
TEST(KernelVariants, AttentionWithSinksEqualsReference) {
  const size_t head_dim = 64, stride = head_dim, n_q = 3;
  const std::vector<float> sinks = {-3.0f, 0.5f, 40.0f};
  for (size_t n_kv : {size_t(1), size_t(40), size_t(600)}) {
    const auto q = tzero::test::random_floats(n_q * head_dim, 301, 3.0f);
    const auto kc = tzero::test::random_floats(n_kv * stride, 302, 3.0f);
    const auto vc = tzero::test::random_floats(n_kv * stride, 303);
    const PagedCopy kp(kc, n_kv, stride, 16, true), vp(vc, n_kv, stride, 16, true);
    std::vector<float> scratch(n_kv), ref(n_q * head_dim), plain(n_q * head_dim);
    std::vector<float> none(n_q * head_dim);
    const float minus_inf = -INFINITY;
    for (size_t g = 0; g < n_q; ++g) {
      tzero::attention_head_ref(&q[g * head_dim], kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                                scratch.data(), &ref[g * head_dim], 0.0f, &sinks[g]);
      tzero::attention_head_ref(&q[g * head_dim], kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                                scratch.data(), &plain[g * head_dim]);
      tzero::attention_head_ref(&q[g * head_dim], kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                                scratch.data(), &none[g * head_dim], 0.0f, &minus_inf);
    }
    EXPECT_FALSE(same_bits(ref.data(), plain.data(), ref.size())) << "the sinks did nothing";
    EXPECT_TRUE(same_bits(none.data(), plain.data(), ref.size())) << "a -inf sink is not none";
    for (const KernelSet* k : tzero::available_kernels()) {
      tzero::AttnScratch sc;
      std::vector<float> got(n_q * head_dim, -1.0f);
      tzero::attention_heads(*k, q.data(), head_dim, n_q, kp.rows, vp.rows, n_kv, head_dim, 0.125f,
                             sc, got.data(), head_dim, 0.0f, sinks.data());
      EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size())) << k->name << " n_kv=" << n_kv;
    }
  }
}

// MLA's attention (deepseek2): keys of head_dim 80 whose first 64 floats are the values
// (v_dim 64, the value rows are the key rows), through every kernel set, paged, over one and
// three position blocks, equal attention_head_ref over separate copies of those prefixes.
TEST(KernelVariants, KeyPrefixValuesEqualReference) {
  const size_t kd = 80, vd = 64, n_q = 4;
  for (size_t n_kv : {size_t(3), size_t(600)}) {
    const auto q = tzero::test::random_floats(n_q * kd, 401, 2.0f);
    const auto kc = tzero::test::random_floats(n_kv * kd, 402, 2.0f);
    std::vector<float> vc(n_kv * vd);  // the prefixes, as their own rows
    for (size_t t = 0; t < n_kv; ++t) std::copy_n(&kc[t * kd], vd, &vc[t * vd]);
    const float *kp = kc.data(), *vp = vc.data();
    std::vector<float> scratch(n_kv), ref(n_q * vd);
    // The reference's head_dim is the value width; its scores need the whole key: compute them
    // with the key rows, through the pieces, then the blocks over the value copies.
    for (size_t g = 0; g < n_q; ++g) {
      float m = -INFINITY;
      tzero::attn_scores_ref(&q[g * kd], 0, 1, tzero::single_block(&kp, kd), 0, n_kv, kd, 0.1f,
                             scratch.data(), n_kv, &m);
      std::vector<float> o(vd), oj(vd);
      float z = 0;
      for (size_t t0 = 0; t0 < n_kv; t0 += tzero::kAttnBlock) {
        const size_t t1 = std::min(n_kv, t0 + tzero::kAttnBlock);
        float zj;
        tzero::attn_block_ref(scratch.data() + t0, 0, 1, &m, tzero::single_block(&vp, vd), t0, t1,
                              vd, &zj, oj.data(), 0);
        if (t0 == 0) {
          z = zj;
          o = oj;
        } else {
          z = z + zj;
          for (size_t d = 0; d < vd; ++d) o[d] = o[d] + oj[d];
        }
      }
      for (size_t d = 0; d < vd; ++d) ref[g * vd + d] = o[d] / z;
    }
    const PagedCopy kpaged(kc, n_kv, kd, 16, true);
    for (const KernelSet* k : tzero::available_kernels()) {
      tzero::AttnScratch sc;
      std::vector<float> got(n_q * vd, -1.0f);
      tzero::attention_heads(*k, q.data(), kd, n_q, kpaged.rows, kpaged.rows, n_kv, kd, 0.1f, sc,
                             got.data(), vd, 0.0f, nullptr, vd);
      EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size())) << k->name << " n_kv=" << n_kv;
    }
  }
}

// The pieces on their own, as a backend that splits position blocks over threads calls them:
// scores of a sub-range land at their offsets and the running max only grows.
TEST(KernelVariants, AttentionScoresOfSubrangesEqualScalarBits) {
  const size_t hd = 64, n_q = 3, n_kv = 300, ld = 304;
  const auto q = tzero::test::random_floats(n_q * hd, 91, 2.0f);
  const auto kc = tzero::test::random_floats(n_kv * hd, 92, 2.0f);
  const float* kp = kc.data();
  const tzero::KvRows kr = tzero::single_block(&kp, hd);
  for (const KernelSet* k : tzero::available_kernels()) {
    std::vector<float> s_ref(n_q * ld, 0.0f), s(n_q * ld, 0.0f);
    std::vector<float> m_ref(n_q, -INFINITY), m(n_q, -INFINITY);
    tzero::attn_scores_ref(q.data(), hd, n_q, kr, 0, n_kv, hd, 0.3f, s_ref.data(), ld,
                           m_ref.data());
    for (size_t t0 : {size_t(0), size_t(5), size_t(37), size_t(256)}) {
      const size_t t1 = std::min(n_kv, t0 == 0 ? 5 : t0 == 5 ? 37 : t0 == 37 ? 256 : n_kv);
      k->attn_scores(q.data(), hd, n_q, kr, t0, t1, hd, 0.3f, s.data() + t0, ld, m.data());
    }
    EXPECT_TRUE(same_bits(s_ref.data(), s.data(), s.size())) << k->name;
    EXPECT_TRUE(same_bits(m_ref.data(), m.data(), n_q)) << k->name;
  }
}

TEST(KernelVariants, ActivationQuantizationEqualsScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  for (uint32_t seed = 0; seed < 50; ++seed) {
    auto x = tzero::test::random_floats(32 * 9, seed, seed % 2 ? 0.01f : 30.0f);
    if (seed == 3) std::fill(x.begin(), x.begin() + 32, 0.0f);  // an all-zero block
    // A block with amax 127 has d = 1 and id = 1, so x = k + 0.5 are exact ties (to even).
    if (seed == 4) {
      x[0] = 127.0f;
      for (int i = 1; i < 32; ++i) x[i] = (i % 2 ? -1.0f : 1.0f) * (float(i) + 0.5f);
    }
    std::vector<tzero::ActQ8> a(9), b(9);
    tzero::scalar_kernels().quantize_act_q8(x.data(), a.data(), x.size());
    std::vector<tzero::ActQ8K> ak(1), bk(1);
    tzero::scalar_kernels().quantize_act_q8k(x.data(), ak.data(), 256);
    for (const KernelSet* k : variants()) {
      k->quantize_act_q8(x.data(), b.data(), x.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(tzero::ActQ8)), 0) << k->name;
      k->quantize_act_q8k(x.data(), bk.data(), 256);
      EXPECT_EQ(std::memcmp(ak.data(), bk.data(), sizeof(tzero::ActQ8K)), 0) << k->name;
    }
  }
}

TEST(KernelVariants, SelectionHonoursChoiceAndRejectsUnknown) {
  EXPECT_STREQ(tzero::select_kernels("scalar").name, "scalar");
  EXPECT_STREQ(tzero::select_kernels("auto").name, tzero::available_kernels().back()->name);
  EXPECT_THROW(tzero::select_kernels("sse9"), tzero::Error);
  // Another architecture's set is refused with the "--kernels NAME: why" of an unavailable one
  // (the e2e tests skip such sets by that message).
#if defined(__aarch64__)
  const char* foreign = "avx2";
#else
  const char* foreign = "neon";
#endif
  try {
    tzero::select_kernels(foreign);
    ADD_FAILURE() << foreign << " was selected";
  } catch (const tzero::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(std::string("--kernels ") + foreign + ": ", 0), 0u)
        << e.what();
  }
}

// The batched kernels tile rows and tokens (and pad block groups of 8): every tile shape and
// tail, decode-sized and prefill-sized batches, and block counts that are not multiples of 8.
TEST(KernelVariants, BatchedQuantGemmTilesEqualScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  tzero::ThreadPool pool(2);
  uint32_t seed = 100;
  for (TensorType type :
       {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
        TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
        TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_XS}) {
    const size_t block = tzero::traits(type).block_size;
    for (size_t K : {32, 96, 256, 288, 1056, 2304, 4352}) {
      if (K % block) continue;
      // 29 rows: where the decode kernels walk rows side by side (the avx512 set's 32-element
      // and float ones on Intel, kernels/x86/decode_rows.h), each of the 2 threads walks 3 rows
      // in each of its 4 ranges and 2 or 3 left over.
      for (size_t N : {1, 2, 3, 5, 7, 13, 29}) {
        std::vector<uint8_t> w;
        const tzero::Matrix m = random_matrix(type, N, K, seed++, w);
        for (size_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 17, 33})
          expect_matmul_variants_equal(pool, m, T, seed++,
                                       std::string(tzero::traits(type).name) +
                                           " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                                           " T=" + std::to_string(T));
      }
    }
  }
}

// Raw random blocks reach what the quantizers never write: Q8_0 weights of -128, activation
// quants of +-127 everywhere (activation quantizers never give -128), Q4_K scales and mins of 63
// with nibbles of 15, Q6_K scales of -128 with quants of 0, IQ4_XS and Q3_K scales of -32 with
// their most negative levels, Q2_K scales, mins and quants at their maxima (integer sums past
// 2^24, where float(int) rounds), and scales that differ in every sub-block.
TEST(KernelVariants, QuantGemmRawBlocksEqualScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  std::mt19937 rng(42);
  auto bytes = [&](uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(rng());
  };
  auto f16 = [&] { return uint16_t(0x2000 + rng() % 0x3000); };  // finite, about 2^-7 .. 2^4
  for (TensorType type :
       {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
        TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_XS}) {
    const bool k_quant = tzero::traits(type).block_size == 256;
    for (size_t K : {256, 2304, 4352}) {
      for (int extreme = 0; extreme < 4; ++extreme) {
        const size_t N = 7, T = extreme % 2 ? 9 : extreme == 2 ? 3 : 1;
        const size_t rb = tzero::row_bytes(type, K);
        const size_t nb = K / tzero::traits(type).block_size;
        std::vector<uint8_t> w(N * rb);
        bytes(w.data(), w.size());
        for (size_t r = 0; r < N; ++r)
          for (size_t b = 0; b < nb; ++b) {
            uint8_t* blk = &w[r * rb + b * (rb / nb)];
            const uint16_t d = f16();
            if (type == TensorType::Q6_K) {  // ql, qh, scales, then d
              // Extreme: quants 0 (q - 32 = -32) and scales of -128 everywhere.
              if (extreme >= 2) std::memset(blk, 0x00, 192);
              if (extreme >= 2) std::memset(blk + 192, 0x80, 16);
              std::memcpy(blk + 208, &d, 2);
              continue;
            }
            if (type == TensorType::Q3_K) {  // hmask, qs, scales, then d
              // Extreme: quants 0 with no high bit (-4) and scales 0 (-32) everywhere.
              if (extreme >= 2) std::memset(blk, 0x00, 108);
              std::memcpy(blk + 108, &d, 2);
              continue;
            }
            if (type == TensorType::Q2_K) {  // scales, qs, then d, dmin
              const uint16_t dmin = f16();
              // Extreme: scales and mins 15, quants 3 everywhere.
              if (extreme >= 2) std::memset(blk, 0xff, 80);
              std::memcpy(blk + 80, &d, 2);
              std::memcpy(blk + 82, &dmin, 2);
              continue;
            }
            if (type == TensorType::IQ4_XS) {  // d, scales_h, scales_l, qs
              // Extreme: scales 0 (-32) and nibbles 0 (-127) everywhere.
              if (extreme >= 2) std::memset(blk + 2, 0x00, 134);
              std::memcpy(blk, &d, 2);
              continue;
            }
            std::memcpy(blk, &d, 2);
            if (k_quant) {
              const uint16_t dmin = f16();
              std::memcpy(blk + 2, &dmin, 2);
              // scales, mins 63; nibbles 15 (Q5_K: and every fifth bit set, quants of 31)
              if (extreme >= 2) std::memset(blk + 4, 0xff, rb / nb - 4);
            } else if (extreme >= 2) {
              std::memset(blk + 2, type == TensorType::Q8_0 ? 0x80 : 0x00, rb / nb - 2);
            }
          }
        std::vector<float> ref(T * N), got(T * N);
        const void* xp;
        std::vector<tzero::ActQ8> xq(T * nb);
        std::vector<tzero::ActQ8K> xk(T * nb);
        for (size_t i = 0; i < T * nb; ++i) {
          int8_t* qs = k_quant ? xk[i].qs : xq[i].qs;
          const size_t n = k_quant ? 256 : 32;
          bytes(reinterpret_cast<uint8_t*>(qs), n);
          for (size_t j = 0; j < n; ++j) {
            if (qs[j] == -128) qs[j] = -127;
            if (extreme >= 2) qs[j] = int8_t(j % 3 ? 127 : -127);
          }
          if (k_quant) {
            xk[i].d = 0.001f * float(1 + rng() % 1000);
            for (int g = 0; g < 16; ++g) {
              int s = 0;
              for (int j = 0; j < 16; ++j) s += qs[16 * g + j];
              xk[i].bsums[g] = int16_t(s);
            }
          } else {
            xq[i].d = 0.001f * float(1 + rng() % 1000);
          }
        }
        xp = k_quant ? static_cast<const void*>(xk.data()) : xq.data();
        tzero::scalar_kernels().gemm_for(type)(w.data(), rb, xp, K, N, T, ref.data(), N);
        for (const KernelSet* k : variants()) {
          std::fill(got.begin(), got.end(), -1.0f);
          k->gemm_for(type)(w.data(), rb, xp, K, N, T, got.data(), N);
          EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size()))
              << k->name << " " << tzero::traits(type).name << " K=" << K << " T=" << T
              << " extreme=" << extreme / 2;
        }
      }
    }
  }
}

namespace {

// A uniform float in [-1, 1) (cheap: these tests draw hundreds of millions).
float uniform(std::mt19937& rng) {
  return float(int32_t(rng())) * 0x1p-31f;
}

// Weights and activations for the float gemm tests. Scenario 0: random uniforms. 1: products of
// +-2^-20 and +-2^-131 that all underflow to a signed zero (so lanes hold -0.0, which a padded
// fma(0, 0, acc) would turn into +0.0; even rows and every third token give all-negative
// products, so whole dots are -0.0). 2: +-0.0 mixed with such tiny values (lanes flip between
// -0.0 and +0.0). 3: infinities and overflows of one sign per (row, token) pair (positive
// activations; odd rows negated), never inf - inf or inf * 0, whose NaN bits would depend on
// which operand an instruction propagates.
float gemm_weight(int scenario, std::mt19937& rng, size_t r) {
  const bool neg = rng() % 2;
  switch (scenario) {
    case 1:
      return r % 2 == 0 || neg ? -0x1p-20f : 0x1p-20f;
    case 2:
      return rng() % 3 == 0 ? (neg ? -0x1p-20f : 0x1p-20f) : (neg ? -0.0f : 0.0f);
    case 3: {
      const uint32_t u = rng() % 64;
      const float v = u == 0   ? std::numeric_limits<float>::infinity()
                      : u == 1 ? 60000.0f
                               : std::fabs(uniform(rng)) + 0.125f;
      return r % 2 ? -v : v;
    }
    default:
      return uniform(rng);
  }
}

float gemm_act(int scenario, std::mt19937& rng, size_t t) {
  const bool neg = t % 3 != 0 && rng() % 2;
  switch (scenario) {
    case 1:
      return neg ? -0x1p-131f : 0x1p-131f;
    case 2:
      return rng() % 3 == 0 ? (neg ? -0x1p-131f : 0x1p-131f) : (neg ? -0.0f : 0.0f);
    case 3: {
      const uint32_t u = rng() % 128;
      return u == 0   ? std::numeric_limits<float>::infinity()
             : u == 1 ? 1e35f
                      : std::fabs(uniform(rng)) + 0.125f;
    }
    default:
      return uniform(rng);
  }
}

// One float-weight matmul (N x K weights of `type`, T tokens) through every variant, against
// the scalar reference's bits.
void expect_float_gemm_equal(tzero::ThreadPool& pool, TensorType type, size_t N, size_t K, size_t T,
                             int scenario, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> wf(N * K), x(T * K);
  for (size_t r = 0; r < N; ++r)
    for (size_t k = 0; k < K; ++k) wf[r * K + k] = gemm_weight(scenario, rng, r);
  for (size_t t = 0; t < T; ++t)
    for (size_t k = 0; k < K; ++k) x[t * K + k] = gemm_act(scenario, rng, t);
  const size_t rb = tzero::row_bytes(type, K);
  std::vector<uint8_t> w(N * rb);
  for (size_t r = 0; r < N; ++r) tzero::quantize_row(type, &wf[r * K], &w[r * rb], K);
  const tzero::Matrix m{type, w.data(), int64_t(N), int64_t(K), rb};
  expect_matmul_variants_equal(pool, m, x, T,
                               std::string(tzero::traits(type).name) + " K=" + std::to_string(K) +
                                   " N=" + std::to_string(N) + " T=" + std::to_string(T) +
                                   " scenario=" + std::to_string(scenario));
}

}  // namespace

// The batched float gemms tile rows and tokens, chunk the tokens (long rows below) and mask the
// K % 16 tail: every tile shape and tail,
// decode-sized and prefill-sized batches, and the signed zeros and infinities that a padded or
// reordered lane would change.
TEST(KernelVariants, BatchedFloatGemmTilesEqualScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  tzero::ThreadPool pool(2);
  const std::vector<size_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 33, 70};
  uint32_t seed = 300;
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16})
    for (size_t K : {5, 16, 23, 64, 100, 2048, 5632 + 7}) {
      // Every row count on short rows and 29 (decode's side-by-side ranges with leftovers); on
      // long ones a tile's worth, one more, and 13.
      for (size_t N : K < 2048 ? std::vector<size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 29}
                               : std::vector<size_t>{1, 6, 7, 13})
        for (size_t T : tokens) expect_float_gemm_equal(pool, type, N, K, T, 0, seed++);
      for (int scenario : {1, 2, 3})
        for (size_t N : {1, 5, 13})
          for (size_t T : {1, 4, 5, 7, 17, 70})
            expect_float_gemm_equal(pool, type, N, K, T, scenario, seed++);
    }
  // Rows long enough that a chunk holds 8 tokens (K = 65543) or a single tile of 4 (K = 262147,
  // below one tile's worth): several chunks, partial tiles at the end of each.
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16})
    for (int scenario : {0, 1}) {
      expect_float_gemm_equal(pool, type, 7, 65536 + 7, 17, scenario, seed++);
      expect_float_gemm_equal(pool, type, 7, 262144 + 3, 9, scenario, seed++);
    }
}

#if defined(__x86_64__)
// The x86 decode kernels walk rows side by side on Intel and one at a time elsewhere
// (kernels/x86/decode_rows.h): both ways give the scalar bits on this CPU, whichever it is.
// 29 rows over 2 threads: 4 ranges of 3 rows each and 2-3 left over; 3 rows: all left over.
TEST(KernelVariants, DecodeRowsEitherWayEqualScalarBits) {
  if (variants().empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  tzero::ThreadPool pool(2);
  const bool chosen = tzero::x86::decode_rows_side_by_side();
  uint32_t seed = 500;
  for (bool side : {true, false}) {
    tzero::x86::set_decode_rows_side_by_side(side);
    for (TensorType type :
         {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
          TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
          TensorType::MXFP4, TensorType::Q4_K, TensorType::Q6_K, TensorType::Q2_K}) {
      const size_t block = tzero::traits(type).block_size;
      for (size_t K : {size_t(256), size_t(2304), block == 1 ? size_t(2048 + 7) : size_t(0)}) {
        if (K == 0) continue;
        for (size_t N : {3, 29}) {
          std::vector<uint8_t> w;
          const tzero::Matrix m = random_matrix(type, N, K, seed++, w);
          for (size_t T : {1, 2, 4})
            expect_matmul_variants_equal(pool, m, T, seed++,
                                         std::string(tzero::traits(type).name) +
                                             (side ? " side by side" : " one row") +
                                             " K=" + std::to_string(K) + " N=" + std::to_string(N) +
                                             " T=" + std::to_string(T));
        }
      }
    }
  }
  tzero::x86::set_decode_rows_side_by_side(chosen);
}
#endif
