// Every kernel variant's gemm of the 32-element block types of quant_legacy.h (Q4_1, Q5_0,
// Q5_1, IQ4_NL, MXFP4) returns exactly the scalar reference's bits on raw random blocks: what
// the quantizers never write (negative, zero, -0, subnormal and the largest f16 scales and
// mins, E8M0 exponents 0 to 200, every nibble and fifth-bit pattern, all-maximum and all-minimum
// codes, activation quants of +-127 everywhere), decode and batched sizes, block counts that are
// not multiples of 8. Compares bits with memcmp.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/kernel_set.h"
#include "kernels/quant.h"
#include "kernels/quant_legacy.h"

namespace {

using tzero::KernelSet;
using tzero::TensorType;

std::vector<const KernelSet*> simd_variants() {
  auto all = tzero::available_kernels();
  std::vector<const KernelSet*> v(all.begin() + 1, all.end());
  try {
    v.push_back(&tzero::select_kernels("amx-emu"));
  } catch (const tzero::Error&) {
  }
  return v;
}

// An f16 scale: random finite of either sign (2^-14 .. 2^14), or one of the edge values.
uint16_t edge_f16(std::mt19937& rng) {
  switch (rng() % 8) {
    case 0:
      return 0x0000;  // +0
    case 1:
      return 0x8000;  // -0
    case 2:
      return uint16_t(1 + rng() % 0x3ff);  // subnormal
    case 3:
      return 0x7bff;  // 65504, the largest
    case 4:
      return 0xfbff;  // -65504
    default:
      return uint16_t(((rng() & 1) << 15) | (0x0400 + rng() % 0x7000));
  }
}

}  // namespace

TEST(KernelVariants, LegacyQuantGemmRawBlocksEqualScalarBits) {
  const auto variants = simd_variants();
  if (variants.empty()) GTEST_SKIP() << "no SIMD kernel variant runs on this CPU";
  std::mt19937 rng(7);
  auto bytes = [&](uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = uint8_t(rng());
  };
  int compared = 0;
  for (TensorType type : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL,
                          TensorType::MXFP4}) {
    const bool has_min = type == TensorType::Q4_1 || type == TensorType::Q5_1;
    const size_t bs = tzero::traits(type).type_size;
    for (size_t K : {32, 256, 1056, 2304, 4352}) {
      // extreme: 0 random codes, 1 every code at its maximum (nibbles 15, fifth bits set),
      // 2 every code at its minimum (nibbles 0, fifth bits clear), 3 random with activation quants
      // of +-127 everywhere.
      for (int extreme = 0; extreme < 4; ++extreme) {
        const size_t nb = K / 32, N = 7, rb = nb * bs;
        std::vector<uint8_t> w(N * rb);
        bytes(w.data(), w.size());
        for (size_t r = 0; r < N; ++r)
          for (size_t b = 0; b < nb; ++b) {
            uint8_t* blk = &w[r * rb + b * bs];
            if (type == TensorType::MXFP4) {
              const uint32_t pick = rng() % 8;
              blk[0] = uint8_t(pick < 3 ? pick : rng() % 201);  // 0, 1, 2 or up to 200
            } else {
              const uint16_t d = edge_f16(rng);
              std::memcpy(blk, &d, 2);
              if (has_min) {
                const uint16_t m = edge_f16(rng);
                std::memcpy(blk + 2, &m, 2);
              }
            }
            const size_t codes = type == TensorType::MXFP4 ? 1 : has_min ? 4 : 2;
            if (extreme == 1) std::memset(blk + codes, 0xff, bs - codes);
            if (extreme == 2) std::memset(blk + codes, 0x00, bs - codes);
          }
        for (size_t T : {1, 2, 3, 4, 9}) {
          std::vector<tzero::ActQ8> x(T * nb);
          for (auto& xb : x) {
            bytes(reinterpret_cast<uint8_t*>(xb.qs), 32);
            for (int j = 0; j < 32; ++j) {
              if (xb.qs[j] == -128) xb.qs[j] = -127;
              if (extreme == 3) xb.qs[j] = int8_t(j % 3 ? 127 : -127);
            }
            xb.d = 0.001f * float(1 + rng() % 1000);
          }
          std::vector<float> ref(T * N), got(T * N);
          tzero::scalar_kernels().gemm_for(type)(w.data(), rb, x.data(), K, N, T, ref.data(), N);
          for (const KernelSet* k : variants) {
            std::fill(got.begin(), got.end(), -1.0f);
            k->gemm_for(type)(w.data(), rb, x.data(), K, N, T, got.data(), N);
            EXPECT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)), 0)
                << k->name << " " << tzero::traits(type).name << " K=" << K
                << " extreme=" << extreme << " T=" << T;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}
