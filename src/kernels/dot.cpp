#include "kernels/dot.h"

#include <cmath>

#include "base/fp16.h"

namespace tzero {

namespace {

float reduce16(float* acc) {
  for (int l = 0; l < 8; ++l) acc[l] += acc[l + 8];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

float reduce8(float* acc) {
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  acc[0] += acc[1];
  return acc[0];
}

template <typename Widen>
float dot_lanes16(const float* x, size_t n, Widen w) {
  float acc[kDotLanes] = {};
  for (size_t k = 0; k < n; ++k) acc[k % kDotLanes] = std::fma(w(k), x[k], acc[k % kDotLanes]);
  return reduce16(acc);
}

template <typename Block, typename Isum>
float dot_blocks8(const Block* w, const ActQ8* x, size_t n, Isum isum) {
  float acc[kBlockLanes] = {};
  for (size_t b = 0; b < n / kQBlock; ++b) {
    const float p = fp16_to_float(w[b].d) * x[b].d;
    acc[b % kBlockLanes] = std::fma(p, float(isum(w[b], x[b])), acc[b % kBlockLanes]);
  }
  return reduce8(acc);
}

}  // namespace

float dot_f32_ref(const float* w, const float* x, size_t n) {
  return dot_lanes16(x, n, [w](size_t k) { return w[k]; });
}

float dot_f16_ref(const uint16_t* w, const float* x, size_t n) {
  return dot_lanes16(x, n, [w](size_t k) { return fp16_to_float(w[k]); });
}

float dot_bf16_ref(const uint16_t* w, const float* x, size_t n) {
  return dot_lanes16(x, n, [w](size_t k) { return bf16_to_float(w[k]); });
}

float dot_q8_0_ref(const BlockQ8_0* w, const ActQ8* x, size_t n) {
  return dot_blocks8(w, x, n, [](const BlockQ8_0& wb, const ActQ8& xb) {
    int32_t s = 0;
    for (int i = 0; i < kQBlock; ++i) s += int32_t(wb.qs[i]) * int32_t(xb.qs[i]);
    return s;
  });
}

float dot_q4_0_ref(const BlockQ4_0* w, const ActQ8* x, size_t n) {
  return dot_blocks8(w, x, n, [](const BlockQ4_0& wb, const ActQ8& xb) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) {
      s += ((wb.qs[i] & 15) - 8) * int32_t(xb.qs[i]);
      s += ((wb.qs[i] >> 4) - 8) * int32_t(xb.qs[i + 16]);
    }
    return s;
  });
}

float sum_f32_ref(const float* x, size_t n) {
  float acc[kDotLanes] = {};
  for (size_t k = 0; k < n; ++k) acc[k % kDotLanes] += x[k];
  return reduce16(acc);
}

}  // namespace tzero
