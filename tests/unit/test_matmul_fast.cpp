// The matmul of `--mode fast` (kernels/matmul_fast.cpp) claims row chunks dynamically but keeps
// whole rows: its output has the bits of the deterministic matmul for every weight type, kernel
// variant, pool size and batch (so fast mode's run-to-run differences come from its attention
// alone). The former 8-argument signature (k_slices = 1, what model/forward.cpp passes) is the
// same function.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "support/test_support.h"

namespace {

using tzero::TensorType;

TEST(MatmulFast, WholeRowsGiveTheDeterministicBits) {
  const size_t N = 301, K = 512;  // three chunks of 128 rows, the last one short
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                       TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                       TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q4_K, TensorType::Q5_K,
                       TensorType::Q6_K, TensorType::Q2_K, TensorType::Q3_K, TensorType::IQ4_XS}) {
    const std::vector<float> wf = tzero::test::random_floats(N * K, 300 + uint32_t(t));
    const size_t rb = tzero::row_bytes(t, K);
    std::vector<uint8_t> w(N * rb);
    for (size_t r = 0; r < N; ++r) tzero::quantize_row(t, &wf[r * K], &w[r * rb], K);
    const tzero::Matrix m{t, w.data(), int64_t(N), int64_t(K), rb};
    for (size_t T : {1, 3, 9}) {
      const std::vector<float> x = tzero::test::random_floats(T * K, 400 + uint32_t(T));
      for (int threads : {1, 2, 4}) {
        tzero::ThreadPool pool(threads);
        for (const tzero::KernelSet* k : tzero::available_kernels()) {
          tzero::MatmulScratch scratch;
          std::vector<float> want(T * N), got(T * N, -1.0f);
          tzero::matmul(pool, *k, m, x.data(), T, want.data(), scratch);
          tzero::matmul_fast(pool, *k, m, x.data(), T, got.data(), scratch);
          EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << tzero::traits(t).name << " " << k->name << " threads=" << threads << " T=" << T;
        }
      }
    }
  }
}

}  // namespace
