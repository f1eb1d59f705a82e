// The Rows16 layout (kernels/rows16.h): a permutation of each 16-row panel's bytes, undone
// exactly; and its avx512 kernels (kernels/x86/gemm_rows16.h) return the scalar reference's bits
// on the file's layout, for 1 to 40 tokens, block counts that are and are not multiples of 8, raw
// random blocks with edge scales, every type with the layout. memcmp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"
#include "kernels/rows16.h"
#if defined(__x86_64__)
#include "kernels/x86/rows16_kernels.h"
#endif

namespace {

using tzero::TensorType;

constexpr TensorType kRows16Types[] = {TensorType::Q4_K,   TensorType::Q5_K, TensorType::Q6_K,
                                       TensorType::IQ4_XS, TensorType::Q2_K, TensorType::Q3_K};

// n_rows rows of nb random blocks of t (one of kRows16Types), with finite scales (edge values
// among them).
std::vector<uint8_t> random_rows(TensorType t, size_t n_rows, size_t nb, std::mt19937& rng) {
  const size_t bs = tzero::traits(t).type_size;
  const size_t d_at = t == TensorType::Q6_K   ? offsetof(tzero::BlockQ6_K, d)
                      : t == TensorType::Q2_K ? offsetof(tzero::BlockQ2_K, d)
                      : t == TensorType::Q3_K ? offsetof(tzero::BlockQ3_K, d)
                                              : 0;
  const size_t n_d =
      t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q2_K ? 2 : 1;
  std::vector<uint8_t> w(n_rows * nb * bs);
  for (auto& b : w) b = uint8_t(rng());
  for (size_t b = 0; b < n_rows * nb; ++b) {
    uint8_t* blk = &w[b * bs];
    for (size_t s = 0; s < n_d; ++s) {
      const uint16_t edge[] = {0x0000, 0x8000, 0x0001, 0x7bff, 0xfbff};
      const uint16_t h = rng() % 4 == 0 ? edge[rng() % 5]
                                        : uint16_t(((rng() & 1) << 15) | (0x0400 + rng() % 0x7000));
      std::memcpy(blk + d_at + 2 * s, &h, 2);
    }
  }
  return w;
}

std::vector<tzero::ActQ8K> random_acts(size_t n, std::mt19937& rng) {
  std::vector<tzero::ActQ8K> x(n);
  for (auto& xb : x) {
    for (auto& q : xb.qs) q = int8_t(int(rng() % 256) - 128);
    for (int k = 0; k < 16; ++k) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += xb.qs[16 * k + i];
      xb.bsums[k] = int16_t(s);
    }
    xb.d = 0.001f * float(1 + rng() % 1000);
  }
  return x;
}

}  // namespace

TEST(Rows16, PanelsArePermutedAndUndoneExactly) {
  std::mt19937 rng(5);
  for (TensorType t : kRows16Types) {
    ASSERT_TRUE(tzero::rows16_applies(t));
    for (size_t nb : {1, 3, 8, 11}) {
      const size_t rb = nb * tzero::traits(t).type_size, n_rows = 37;
      const std::vector<uint8_t> file = random_rows(t, n_rows, nb, rng);
      std::vector<uint8_t> packed = file, back(file.size());
      tzero::to_rows16(t, packed.data(), n_rows, rb);
      EXPECT_NE(0, std::memcmp(packed.data(), file.data(), 16 * rb));
      // Every byte of a panel row where the header says; the 5 tail rows untouched.
      for (size_t r = 0; r < 32; ++r)
        for (size_t o = 0; o < rb; ++o)
          ASSERT_EQ(packed[(r / 16) * 16 * rb + tzero::rows16_offset(t, r % 16, o)],
                    file[r * rb + o]);
      EXPECT_EQ(0, std::memcmp(packed.data() + 32 * rb, file.data() + 32 * rb, 5 * rb));
      tzero::from_rows16(t, packed.data(), back.data(), n_rows, rb);
      EXPECT_EQ(0, std::memcmp(back.data(), file.data(), file.size()));
    }
  }
  // A few places by hand: Q4_K row 3's qs[37] (chunk 1, byte 5: unit 9, byte 1) and Q6_K row 5's
  // d (its second byte).
  EXPECT_EQ(tzero::rows16_offset(TensorType::Q4_K, 3, 16 + 37), 256u + 64 * 9 + 4 * 3 + 1);
  EXPECT_EQ(tzero::rows16_offset(TensorType::Q6_K, 5, 209), 16u * 208 + 2 * 5 + 1);
  EXPECT_EQ(tzero::rows16_offset(TensorType::Q6_K, 0, 210), 16u * 210);  // block 1
  // Q3_K row 2's scales[5] (unit 1, byte 1) and Q2_K row 7's qs[9] (unit 2, byte 1).
  EXPECT_EQ(tzero::rows16_offset(TensorType::Q3_K, 2, 96 + 5), 16u * 96 + 64 * 1 + 4 * 2 + 1);
  EXPECT_EQ(tzero::rows16_offset(TensorType::Q2_K, 7, 16 + 9), 16u * 16 + 64 * 2 + 4 * 7 + 1);
}

TEST(Rows16, Avx512KernelsEqualScalarBits) {
#if defined(__x86_64__)
  bool avx512 = false;
  for (const tzero::KernelSet* k : tzero::available_kernels())
    avx512 = avx512 || std::strcmp(k->name, "avx512") == 0;
  if (!avx512) GTEST_SKIP() << "the avx512 set does not run on this CPU";
  std::mt19937 rng(9);
  const tzero::KernelSet& ref = tzero::scalar_kernels();
  for (TensorType t : kRows16Types) {
    const tzero::GemmFn want_fn = ref.gemm_for(t);
    const tzero::GemmFn got_fn = tzero::x86::avx512_rows16_kernel(t);
    for (size_t nb : {1, 2, 7, 8, 9, 22}) {
      const size_t rb = nb * tzero::traits(t).type_size, n_rows = 48, K = nb * 256;
      const std::vector<uint8_t> file = random_rows(t, n_rows, nb, rng);
      std::vector<uint8_t> packed = file;
      tzero::to_rows16(t, packed.data(), n_rows, rb);
      for (size_t n_tok : {1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 19, 32, 37}) {
        const std::vector<tzero::ActQ8K> x = random_acts(n_tok * nb, rng);
        std::vector<float> want(n_tok * n_rows), got(n_tok * n_rows, -1.0f);
        want_fn(file.data(), rb, x.data(), K, n_rows, n_tok, want.data(), n_rows);
        got_fn(packed.data(), rb, x.data(), K, n_rows, n_tok, got.data(), n_rows);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << tzero::traits(t).name << " nb " << nb << " tokens " << n_tok;
      }
    }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// Every set's Rows16 kernels (KernelSet::gemm_rows16_for) against the scalar reference at token
// counts that take chunks of 8, of 5 to 7, of 4 and the rest, and Q6_K's tiles from 32.
TEST(Rows16, EverySetsKernelsEqualScalarBitsAtEveryTokenCount) {
  std::mt19937 rng(13);
  const tzero::KernelSet& ref = tzero::scalar_kernels();
  size_t ran = 0;
  for (const tzero::KernelSet* k : tzero::available_kernels())
    for (TensorType t : kRows16Types) {
      const tzero::GemmFn fn = k->gemm_rows16_for(t);
      if (!fn) continue;
      ++ran;
      const size_t nb = 9, rb = nb * tzero::traits(t).type_size, n_rows = 32, K = nb * 256;
      const std::vector<uint8_t> file = random_rows(t, n_rows, nb, rng);
      std::vector<uint8_t> packed = file;
      tzero::to_rows16(t, packed.data(), n_rows, rb);
      for (size_t n_tok : {1, 4, 8, 13, 31, 40}) {
        const std::vector<tzero::ActQ8K> x = random_acts(n_tok * nb, rng);
        std::vector<float> want(n_tok * n_rows), got(n_tok * n_rows, -1.0f);
        ref.gemm_for(t)(file.data(), rb, x.data(), K, n_rows, n_tok, want.data(), n_rows);
        fn(packed.data(), rb, x.data(), K, n_rows, n_tok, got.data(), n_rows);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << k->name << " " << tzero::traits(t).name << " tokens " << n_tok;
      }
    }
  if (ran == 0) GTEST_SKIP() << "no kernel set of this CPU reads Rows16";
}

// A Rows16 matrix whose row count is not a multiple of 16 (its tail in the file's layout) through
// tzero::matmul (MatrixGemm: whole panels to the set's Rows16 kernel, or unpacked for a set
// without one, the tail to the file kernel; 2 threads splitting on panels), every set, 1 to 9
// tokens; and its rows one at a time (matrix_row_to_float, matmul_row_ref), panel and tail rows.
TEST(Rows16, MatricesWithATailEqualTheFileLayoutsBitsInEverySet) {
  std::mt19937 rng(17);
  tzero::ThreadPool pool(2);
  for (TensorType t : kRows16Types) {
    const size_t nb = 3, K = nb * 256, n_rows = 37, rb = nb * tzero::traits(t).type_size;
    const std::vector<uint8_t> file = random_rows(t, n_rows, nb, rng);
    std::vector<uint8_t> packed = file;
    tzero::to_rows16(t, packed.data(), n_rows, rb);
    const tzero::Matrix wf{t,          file.data(), int64_t(n_rows),
                           int64_t(K), rb,          tzero::WeightLayout::File};
    tzero::Matrix wp = wf;
    wp.data = packed.data();
    wp.layout = tzero::WeightLayout::Rows16;
    std::vector<float> x(9 * K);
    for (float& v : x) v = float(int(rng() % 2001) - 1000) / 500.0f;
    tzero::MatmulScratch scratch;
    for (const tzero::KernelSet* k : tzero::available_kernels())
      for (size_t n_tok : {1, 5, 9}) {
        std::vector<float> want(n_tok * n_rows), got(n_tok * n_rows, -1.0f);
        tzero::matmul(pool, *k, wf, x.data(), n_tok, want.data(), scratch);
        tzero::matmul(pool, *k, wp, x.data(), n_tok, got.data(), scratch);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << k->name << " " << tzero::traits(t).name << " tokens " << n_tok;
      }
    std::vector<float> a(K), b(K);
    for (size_t r : {0, 15, 16, 31, 32, 36}) {
      tzero::matrix_row_to_float(wf, r, a.data());
      tzero::matrix_row_to_float(wp, r, b.data());
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), K * sizeof(float))) << "row " << r;
      const float ya = tzero::matmul_row_ref(wf, r, x.data());
      const float yb = tzero::matmul_row_ref(wp, r, x.data());
      ASSERT_EQ(0, std::memcmp(&ya, &yb, sizeof(float))) << "row " << r;
    }
    // A part of the matrix that would cut a panel is refused, not read wrong.
    EXPECT_THROW(wp.rows(8, 16), tzero::Error);
    EXPECT_NO_THROW(wp.rows(16, 21));
  }
}
