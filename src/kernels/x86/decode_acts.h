// One token's activations laid out once per call for the 32-element types' decode kernels
// (gemm_q32_decode.h for the avx512 set, gemm_q32_decode_avx2.h for the avx2 set), in the order
// of their weight registers, with each block's terms. Everything here has internal linkage (an
// anonymous namespace): both kernel files include it with their own instruction sets, and a
// shared std::vector<DecodeActs> would let the linker keep the AVX-512 copy of its code for the
// avx2 set.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/quant.h"
#include "kernels/x86/avx2_common.h"

namespace tzero::x86 {
namespace {

struct DecodeActs {
  std::vector<uint8_t> qs;   // (nb8 * 32) int8, in the kernel's order (layout_acts)
  std::vector<float> dx;     // (nb8) d_x, 0 past nb
  std::vector<int32_t> off;  // (nb8) Offset * sum of x_q
  std::vector<float> xsum;   // (nb8) float(sum of x_q), exact (the min types' term)
};

// nb blocks of activations, padded to a multiple of 8 with zero blocks. G: the blocks a register
// of weight quants holds side by side, one per 128-bit lane (4 in a zmm, 2 in a ymm): each run of
// G blocks stores their elements 0-15, then their elements 16-31; G = 0: the blocks whole, one
// after another (Q8_0's 32 quants per 256 bits).
template <int Offset, size_t G>
inline void layout_acts(const ActQ8* xq, size_t nb, DecodeActs* a) {
  const size_t nb8 = (nb + 7) / 8 * 8;
  a->qs.resize(nb8 * 32);
  a->dx.resize(nb8);
  a->off.resize(nb8);
  a->xsum.resize(nb8);
  const __m256i ones8 = _mm256_set1_epi8(1);
  for (size_t b = 0; b < nb8; ++b) {
    const __m256i q = b < nb ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[b].qs))
                             : _mm256_setzero_si256();
    // sum of x_q: exact (u8 1 times s8 in int16 pairs, then int32).
    const int32_t s =
        hsum_i32(_mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), _mm256_set1_epi16(1)));
    a->dx[b] = b < nb ? xq[b].d : 0.0f;
    a->off[b] = Offset * s;
    a->xsum[b] = float(s);
    if constexpr (G == 0) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&a->qs[32 * b]), q);
    } else {
      uint8_t* p = &a->qs[32 * G * (b / G) + 16 * (b % G)];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(q));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16 * G), _mm256_extracti128_si256(q, 1));
    }
  }
}

// The decode kernels' driver: each of n_tok tokens' activations (ActQ8 rows of nb blocks at x)
// laid out once per call, then f(std::integral_constant<int, NT>{}, acts of token t, t) for
// chunks of at most 4 tokens (for_token_chunks), whose weights a kernel unpacks once.
template <int Offset, size_t G, typename F>
inline void for_decode_tokens(const void* x, size_t nb, size_t n_tok, F&& f) {
  const ActQ8* xq = static_cast<const ActQ8*>(x);
  thread_local std::vector<DecodeActs> acts;
  if (acts.size() < n_tok) acts.resize(n_tok);
  for (size_t t = 0; t < n_tok; ++t) layout_acts<Offset, G>(xq + t * nb, nb, &acts[t]);
  for_token_chunks(n_tok, [&](auto nt, size_t t) { f(nt, &acts[t], t); });
}

}  // namespace
}  // namespace tzero::x86
