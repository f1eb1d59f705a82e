// The two super-block orders of dot-v1 (kernels/dot.h), written once for every type that uses
// them; a type supplies only its exact integer parts per super-block. Internal to the scalar
// references (dot_k.cpp, dot_k2.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "base/fp16.h"
#include "kernels/quant_k.h"

namespace tzero::dot_orders {

// acc[0..8) -> ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)), in place.
inline float reduce8(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

// Q6_K's order (also IQ4_XS, Q3_K): acc[b % 8] = fma(d_w * d_x, float(A[b]), acc[b % 8]), tree8.
template <typename Block, int32_t (*Int)(const Block&, const ActQ8K&)>
float scaled_sum(const Block* w, const ActQ8K* x, size_t n) {
  float acc[8] = {};
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float p = fp16_to_float(w[b].d) * x[b].d;
    acc[b % 8] = std::fma(p, float(Int(w[b], x[b])), acc[b % 8]);
  }
  return reduce8(acc);
}

// Q4_K's order (also Q5_K, Q2_K): acc with d_w * d_x and A, accm with dmin_w * d_x and B;
// tree8(acc) - tree8(accm).
template <typename Block, void (*Ints)(const Block&, const ActQ8K&, int32_t*, int32_t*)>
float scaled_sum_minus_mins(const Block* w, const ActQ8K* x, size_t n) {
  float acc[8] = {}, accm[8] = {};
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    int32_t a, m;
    Ints(w[b], x[b], &a, &m);
    const float p = fp16_to_float(w[b].d) * x[b].d;
    const float pm = fp16_to_float(w[b].dmin) * x[b].d;
    acc[b % 8] = std::fma(p, float(a), acc[b % 8]);
    accm[b % 8] = std::fma(pm, float(m), accm[b % 8]);
  }
  const float s = reduce8(acc);
  return s - reduce8(accm);
}

}  // namespace tzero::dot_orders
