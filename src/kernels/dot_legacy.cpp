// The canonical dot products of quant_legacy.h's block types (dot.h, "The other 32-element block
// types"): the scalar references every SIMD variant must match bit for bit.
#include <cmath>

#include "base/fp16.h"
#include "kernels/dot.h"

namespace tzero {

namespace {

float tree8(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

template <typename Block>
int32_t block_isum(const Block& w, const ActQ8& x) {
  int8_t q[kQBlock];
  block_ints(w, q);
  int32_t s = 0;
  for (int i = 0; i < kQBlock; ++i) s += int32_t(q[i]) * int32_t(x.qs[i]);
  return s;
}

int32_t block_xsum(const ActQ8& x) {
  int32_t s = 0;
  for (int i = 0; i < kQBlock; ++i) s += x.qs[i];
  return s;
}

// Q4_0's order; Scale(block) is d_w.
template <typename Block, typename Scale>
float dot_scaled(const Block* w, const ActQ8* x, size_t n, Scale scale) {
  float acc[kBlockLanes] = {};
  for (size_t b = 0; b < n / kQBlock; ++b) {
    const float p = scale(w[b]) * x[b].d;
    acc[b % kBlockLanes] = std::fma(p, float(block_isum(w[b], x[b])), acc[b % kBlockLanes]);
  }
  return tree8(acc);
}

// Q4_1 and Q5_1: the scaled sum and the min's sum in their own lanes, added at the end.
template <typename Block>
float dot_with_min(const Block* w, const ActQ8* x, size_t n) {
  float acc[kBlockLanes] = {}, accm[kBlockLanes] = {};
  for (size_t b = 0; b < n / kQBlock; ++b) {
    const size_t l = b % kBlockLanes;
    const float p = fp16_to_float(w[b].d) * x[b].d;
    const float pm = fp16_to_float(w[b].m) * x[b].d;
    acc[l] = std::fma(p, float(block_isum(w[b], x[b])), acc[l]);
    accm[l] = std::fma(pm, float(block_xsum(x[b])), accm[l]);
  }
  const float s = tree8(acc);
  return s + tree8(accm);
}

float f16_scale_of(const auto& b) {
  return fp16_to_float(b.d);
}

}  // namespace

float dot_q4_1_ref(const BlockQ4_1* w, const ActQ8* x, size_t n) {
  return dot_with_min(w, x, n);
}

float dot_q5_0_ref(const BlockQ5_0* w, const ActQ8* x, size_t n) {
  return dot_scaled(w, x, n, [](const BlockQ5_0& b) { return f16_scale_of(b); });
}

float dot_q5_1_ref(const BlockQ5_1* w, const ActQ8* x, size_t n) {
  return dot_with_min(w, x, n);
}

float dot_iq4_nl_ref(const BlockIQ4_NL* w, const ActQ8* x, size_t n) {
  return dot_scaled(w, x, n, [](const BlockIQ4_NL& b) { return f16_scale_of(b); });
}

float dot_mxfp4_ref(const BlockMXFP4* w, const ActQ8* x, size_t n) {
  return dot_scaled(w, x, n, [](const BlockMXFP4& b) { return e8m0_half_to_float(b.e); });
}

}  // namespace tzero
