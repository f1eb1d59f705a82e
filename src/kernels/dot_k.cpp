// Scalar reference dot products for K-quant weights (canonical order in dot.h).
#include <cmath>

#include "base/fp16.h"
#include "kernels/dot.h"
#include "kernels/dot_k_orders.h"

namespace tzero {

namespace {
// A and B of a Q4_K or Q5_K block from its unpacked quants and its packed scales.
void k_block_ints(const uint8_t* q, const uint8_t* scales, const ActQ8K& x, int32_t* a,
                  int32_t* b) {
  int32_t sa = 0, sb = 0;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    q4_k_scale_min(scales, j, &sc, &m);
    int32_t isum = 0;
    for (int l = 0; l < 32; ++l) isum += int32_t(q[32 * j + l]) * x.qs[32 * j + l];
    sa += sc * isum;
    sb += m * (int32_t(x.bsums[2 * j]) + int32_t(x.bsums[2 * j + 1]));
  }
  *a = sa;
  *b = sb;
}

}  // namespace

void q4_k_block_ints(const BlockQ4_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  uint8_t q[256];
  q4_k_unpack(w, q);
  k_block_ints(q, w.scales, x, a, b);
}

void q5_k_block_ints(const BlockQ5_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  uint8_t q[256];
  q5_k_unpack(w, q);
  k_block_ints(q, w.scales, x, a, b);
}

int32_t q6_k_block_int(const BlockQ6_K& w, const ActQ8K& x) {
  uint8_t q[256];
  q6_k_unpack(w, q);
  int32_t sa = 0;
  for (int i = 0; i < 16; ++i) {
    int32_t isum = 0;
    for (int l = 0; l < 16; ++l) isum += (int32_t(q[16 * i + l]) - 32) * x.qs[16 * i + l];
    sa += int32_t(w.scales[i]) * isum;
  }
  return sa;
}

float dot_q4_k_ref(const BlockQ4_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ4_K, q4_k_block_ints>(w, x, n);
}

float dot_q5_k_ref(const BlockQ5_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ5_K, q5_k_block_ints>(w, x, n);
}

float dot_q6_k_ref(const BlockQ6_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockQ6_K, q6_k_block_int>(w, x, n);
}

}  // namespace tzero
