// Scalar reference dot products for IQ4_XS, Q3_K and Q2_K weights (canonical order in dot.h).
#include <cmath>

#include "base/fp16.h"
#include "kernels/dot.h"
#include "kernels/dot_k_orders.h"

namespace tzero {

int32_t iq4_xs_block_int(const BlockIQ4_XS& w, const ActQ8K& x) {
  int8_t v[256];
  int sc[8];
  iq4_xs_unpack(w, v);
  iq4_xs_scales(w, sc);
  int32_t a = 0;
  for (int j = 0; j < 8; ++j) {
    int32_t isum = 0;
    for (int l = 0; l < 32; ++l) isum += int32_t(v[32 * j + l]) * x.qs[32 * j + l];
    a += sc[j] * isum;
  }
  return a;
}

int32_t q3_k_block_int(const BlockQ3_K& w, const ActQ8K& x) {
  int8_t v[256];
  int sc[16];
  q3_k_unpack(w, v);
  q3_k_scales(w, sc);
  int32_t a = 0;
  for (int i = 0; i < 16; ++i) {
    int32_t isum = 0;
    for (int l = 0; l < 16; ++l) isum += int32_t(v[16 * i + l]) * x.qs[16 * i + l];
    a += sc[i] * isum;
  }
  return a;
}

void q2_k_block_ints(const BlockQ2_K& w, const ActQ8K& x, int32_t* a, int32_t* b) {
  uint8_t q[256];
  q2_k_unpack(w, q);
  int32_t sa = 0, sb = 0;
  for (int i = 0; i < 16; ++i) {
    int32_t isum = 0;
    for (int l = 0; l < 16; ++l) isum += int32_t(q[16 * i + l]) * x.qs[16 * i + l];
    sa += int32_t(w.scales[i] & 15) * isum;
    sb += int32_t(w.scales[i] >> 4) * int32_t(x.bsums[i]);
  }
  *a = sa;
  *b = sb;
}

float dot_iq4_xs_ref(const BlockIQ4_XS* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockIQ4_XS, iq4_xs_block_int>(w, x, n);
}

float dot_q3_k_ref(const BlockQ3_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum<BlockQ3_K, q3_k_block_int>(w, x, n);
}

// Q4_K's order: acc with d_w * d_x and A, accm with dmin_w * d_x and B; tree8(acc) - tree8(accm).
float dot_q2_k_ref(const BlockQ2_K* w, const ActQ8K* x, size_t n) {
  return dot_orders::scaled_sum_minus_mins<BlockQ2_K, q2_k_block_ints>(w, x, n);
}

}  // namespace tzero
