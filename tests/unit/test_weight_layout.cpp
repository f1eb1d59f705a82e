// The Blocks8 weight layout (kernels/weight_layout.h): the repacking is a permutation of each
// row's bytes that puts every field where the header says, undone exactly; and every product
// with Blocks8 rows (a set's own Blocks8 kernels, and the unpacking path of MatrixGemm for every
// other set and token count) returns the scalar reference's bits on the file's layout. Raw
// random blocks with edge scales, rows of block counts that are and are not multiples of 8,
// 29 rows (so the decode kernels' side-by-side row ranges and their leftovers both run). memcmp.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/weight_layout.h"

namespace {

using tzero::TensorType;
using tzero::WeightLayout;

const TensorType kTypes[] = {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                             TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
                             TensorType::MXFP4};

std::vector<const tzero::KernelSet*> all_sets() {
  auto v = tzero::available_kernels();
  try {
    v.push_back(&tzero::select_kernels("amx-emu"));
  } catch (const tzero::Error&) {
  }
  return v;
}

// n_rows rows of nb random blocks of type t, with finite scales (edge values among them).
std::vector<uint8_t> random_rows(TensorType t, size_t n_rows, size_t nb, std::mt19937& rng) {
  const size_t bs = tzero::traits(t).type_size;
  std::vector<uint8_t> w(n_rows * nb * bs);
  for (auto& b : w) b = uint8_t(rng());
  for (size_t b = 0; b < n_rows * nb; ++b) {
    uint8_t* blk = &w[b * bs];
    if (t == TensorType::MXFP4) {
      blk[0] = uint8_t(rng() % 256);  // E8M0 exponents 0 .. 255
      continue;
    }
    const size_t scales = (t == TensorType::Q4_1 || t == TensorType::Q5_1) ? 2 : 1;
    for (size_t s = 0; s < scales; ++s) {
      const uint16_t edge[] = {0x0000, 0x8000, 0x0001, 0x7bff, 0xfbff};
      const uint16_t h = rng() % 4 == 0 ? edge[rng() % 5]
                                        : uint16_t(((rng() & 1) << 15) | (0x0400 + rng() % 0x7000));
      std::memcpy(blk + 2 * s, &h, 2);
    }
  }
  return w;
}

std::vector<tzero::ActQ8> random_acts(size_t n_tok, size_t nb, std::mt19937& rng) {
  std::vector<tzero::ActQ8> x(n_tok * nb);
  for (auto& xb : x) {
    for (auto& q : xb.qs) q = int8_t(int(rng() % 255) - 127);
    xb.d = 0.001f * float(1 + rng() % 1000);
  }
  return x;
}

}  // namespace

TEST(WeightLayout, Blocks8MovesEveryFieldAndUndoesExactly) {
  std::mt19937 rng(11);
  for (TensorType t : kTypes) {
    ASSERT_TRUE(tzero::blocks8_applies(t)) << tzero::traits(t).name;
    const size_t bs = tzero::traits(t).type_size;
    for (size_t nb : {1, 7, 8, 9, 16, 23, 72}) {
      const size_t rb = nb * bs, n_rows = 3;
      const std::vector<uint8_t> file = random_rows(t, n_rows, nb, rng);
      std::vector<uint8_t> b8 = file;
      tzero::to_blocks8(t, b8.data(), n_rows, rb);
      // Block j's first byte (its scale: d, or MXFP4's e) leads the group; its last byte (the
      // last quant byte) ends the group's last field: at 8 * (bs - qs) + j * qs + qs - 1.
      const size_t qs = t == TensorType::Q8_0 ? 32 : 16, d = t == TensorType::MXFP4 ? 1 : 2;
      for (size_t r = 0; r < n_rows; ++r)
        for (size_t b = 0; b < nb / 8 * 8; ++b) {
          const size_t g = r * rb + b / 8 * 8 * bs, j = b % 8;
          const uint8_t* blk = &file[r * rb + b * bs];
          ASSERT_EQ(std::memcmp(&b8[g + j * d], blk, d), 0) << tzero::traits(t).name;
          ASSERT_EQ(std::memcmp(&b8[g + 8 * (bs - qs) + j * qs], blk + bs - qs, qs), 0)
              << tzero::traits(t).name << " nb=" << nb << " block " << b;
        }
      // The tail of fewer than 8 blocks stays where the file has it.
      for (size_t r = 0; r < n_rows; ++r) {
        const size_t tail = nb / 8 * 8 * bs;
        ASSERT_EQ(std::memcmp(&b8[r * rb + tail], &file[r * rb + tail], rb - tail), 0);
      }
      std::vector<uint8_t> back(file.size());
      tzero::from_blocks8(t, b8.data(), back.data(), n_rows, rb);
      ASSERT_EQ(std::memcmp(back.data(), file.data(), file.size()), 0)
          << tzero::traits(t).name << " nb=" << nb;
    }
  }
  EXPECT_FALSE(tzero::blocks8_applies(TensorType::Q4_K));
  EXPECT_FALSE(tzero::blocks8_applies(TensorType::F16));
}

// Every set, every token count (decode kernels and batched tiles): MatrixGemm over Blocks8 rows
// gives the scalar reference's bits over the file's rows (the set's own Blocks8 kernels where it
// has them, the unpacking path otherwise), with 1 and 2 threads.
TEST(WeightLayout, Blocks8ProductsEqualScalarBits) {
  std::mt19937 rng(12);
  int native = 0, compared = 0;
  for (TensorType t : kTypes) {
    for (size_t nb : {3, 8, 9, 23, 72}) {
      const size_t K = nb * 32, N = 29, rb = nb * tzero::traits(t).type_size;
      const std::vector<uint8_t> file = random_rows(t, N, nb, rng);
      std::vector<uint8_t> b8 = file;
      tzero::to_blocks8(t, b8.data(), N, rb);
      tzero::Matrix m{t, b8.data(), int64_t(N), int64_t(K), rb, WeightLayout::Blocks8};
      for (size_t T : {1, 2, 3, 4, 5, 9, 17, 40}) {
        const auto x = random_acts(T, nb, rng);
        std::vector<float> ref(T * N), got(T * N);
        tzero::scalar_kernels().gemm_for(t)(file.data(), rb, x.data(), K, N, T, ref.data(), N);
        for (const tzero::KernelSet* k : all_sets()) {
          for (size_t threads : {1, 2}) {
            tzero::ThreadPool pool{int(threads)};
            const tzero::MatrixGemm gemm(*k, m);
            std::fill(got.begin(), got.end(), -1.0f);
            pool.run(N, [&](size_t r0, size_t r1) {
              gemm(m.row(int64_t(r0)), r1 - r0, x.data(), T, got.data() + r0, N);
            });
            EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)), 0)
                << k->name << " " << tzero::traits(t).name << " nb=" << nb << " T=" << T
                << " threads=" << threads;
            ++compared;
            if (k->gemm_blocks8_for(t)) ++native;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
  if (native == 0) std::printf("[ note ] no kernel set of this CPU reads Blocks8 rows itself\n");
}

// Rows more than MatrixGemm::kUnpackBytes in all: the unpacking path takes them a chunk at a time
// (the scalar set at any token count, the others above their decode kernels' token counts).
TEST(WeightLayout, Blocks8ProductsOverManyUnpackChunks) {
  std::mt19937 rng(14);
  const TensorType t = TensorType::Q8_0;
  const size_t nb = 72, K = nb * 32, N = 300, rb = nb * tzero::traits(t).type_size;
  ASSERT_GT(N * rb, 2 * tzero::MatrixGemm::kUnpackBytes);
  const std::vector<uint8_t> file = random_rows(t, N, nb, rng);
  std::vector<uint8_t> b8 = file;
  tzero::to_blocks8(t, b8.data(), N, rb);
  const tzero::Matrix m{t, b8.data(), int64_t(N), int64_t(K), rb, WeightLayout::Blocks8};
  for (size_t T : {1, 6}) {
    const auto x = random_acts(T, nb, rng);
    std::vector<float> ref(T * N), got(T * N);
    tzero::scalar_kernels().gemm_for(t)(file.data(), rb, x.data(), K, N, T, ref.data(), N);
    for (const tzero::KernelSet* k : all_sets()) {
      std::fill(got.begin(), got.end(), -1.0f);
      tzero::MatrixGemm(*k, m)(m.data, N, x.data(), T, got.data(), N);
      EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)), 0)
          << k->name << " T=" << T;
    }
  }
}

// An --op override of a type's gemm drops the set's Blocks8 kernel for it (the override must
// compute every product), and embedding rows read from Blocks8 rows are the file's values.
TEST(WeightLayout, OverridesAndRowReadsSeeTheFileLayout) {
  for (const tzero::KernelSet* k : all_sets()) {
    tzero::KernelSet copy = *k;
    copy.drop_blocks8(TensorType::Q4_0);
    EXPECT_EQ(copy.gemm_blocks8_for(TensorType::Q4_0), nullptr) << k->name;
    EXPECT_EQ(copy.gemm_blocks8_for(TensorType::Q8_0), k->gemm_blocks8_for(TensorType::Q8_0));
  }
  std::mt19937 rng(13);
  for (TensorType t : kTypes) {
    const size_t nb = 19, K = nb * 32, rb = nb * tzero::traits(t).type_size;
    const std::vector<uint8_t> file = random_rows(t, 4, nb, rng);
    std::vector<uint8_t> b8 = file;
    tzero::to_blocks8(t, b8.data(), 4, rb);
    const tzero::Matrix mf{t, file.data(), 4, int64_t(K), rb, WeightLayout::File};
    const tzero::Matrix mb{t, b8.data(), 4, int64_t(K), rb, WeightLayout::Blocks8};
    std::vector<float> a(K), b(K);
    for (size_t r = 0; r < 4; ++r) {
      tzero::matrix_row_to_float(mf, r, a.data());
      tzero::matrix_row_to_float(mb, r, b.data());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), K * sizeof(float)), 0) << tzero::traits(t).name;
    }
  }
}
