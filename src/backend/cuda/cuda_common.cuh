// Device-side building blocks shared by the CUDA kernels: error checks, exact widening of
// f16/bf16, the exp-v1 port, and the dot-v1 lane trees over warp shuffles. Every floating-point
// operation whose rounding matters is an explicit round-to-nearest intrinsic (__fmaf_rn,
// __fmul_rn, __fadd_rn, __fdiv_rn), so the bits do not depend on nvcc's contraction choices;
// the build adds -fmad=false -prec-div=true -prec-sqrt=true -ftz=false besides.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "base/error.h"

namespace tzero::cuda {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}
#define TZ_CUDA(call) ::tzero::cuda::cuda_check((call), #call)
// After a launch: reports a bad configuration at once (execution errors surface at sync()).
#define TZ_CUDA_LAUNCHED(name) ::tzero::cuda::cuda_check(cudaGetLastError(), name)

inline unsigned blocks_for(size_t n, unsigned threads) {
  return unsigned((n + threads - 1) / threads);
}

__device__ __forceinline__ float f16_to_f32(uint16_t h) {
  return __half2float(__ushort_as_half(h));  // exact
}
__device__ __forceinline__ float bf16_to_f32(uint16_t b) {
  return __uint_as_float(uint32_t(b) << 16);
}
// Unaligned-safe little-endian loads from byte pointers of 2-byte aligned blocks.
__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}
__device__ __forceinline__ int load_i32_a2(const uint8_t* p) {  // p 2-byte aligned
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  return int(uint32_t(q[0]) | (uint32_t(q[1]) << 16));
}

// exp_ref (kernels/math.cpp, exp-v1), operation for operation.
__device__ __forceinline__ float exp_v1(float x) {
  if (isnan(x)) return x;
  if (x > 88.72283f) return __int_as_float(0x7f800000);
  if (x < -87.33654f) return 0.0f;
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693145751953125f;
  const float kLn2Lo = 1.428606765330187045e-06f;
  const float n = rintf(__fmul_rn(x, kLog2e));  // nearbyint: ties to even
  float r = __fmaf_rn(n, -kLn2Hi, x);
  r = __fmaf_rn(n, -kLn2Lo, r);
  float p = __fdiv_rn(1.0f, 5040.0f);
  p = __fmaf_rn(p, r, __fdiv_rn(1.0f, 720.0f));
  p = __fmaf_rn(p, r, __fdiv_rn(1.0f, 120.0f));
  p = __fmaf_rn(p, r, __fdiv_rn(1.0f, 24.0f));
  p = __fmaf_rn(p, r, __fdiv_rn(1.0f, 6.0f));
  p = __fmaf_rn(p, r, 0.5f);
  p = __fmaf_rn(p, r, 1.0f);
  p = __fmaf_rn(p, r, 1.0f);
  const int ni = int(n);
  const int n1 = ni / 2, n2 = ni - n1;
  const float s1 = __uint_as_float(uint32_t(n1 + 127) << 23);
  const float s2 = __uint_as_float(uint32_t(n2 + 127) << 23);
  return __fmul_rn(__fmul_rn(p, s1), s2);
}

// silu_ref: x / (1 + exp_ref(-x)).
__device__ __forceinline__ float silu_v1(float x) {
  return __fdiv_rn(x, __fadd_rn(1.0f, exp_v1(-x)));
}

// The 16-lane tree of dot-v1 over the 16 consecutive lanes of a half warp (lane l of the group
// holds acc[l]): acc[l] += acc[l+8], +4, +2, +1. Returns acc[0] in lane 0 of the group (other
// lanes hold partial values). All 32 lanes of the warp must call it.
__device__ __forceinline__ float tree16(float acc) {
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 8, 16));
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 4, 16));
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 2, 16));
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 1, 16));
  return acc;
}
// The 8-lane tree of the quantized dots over groups of 8 lanes: +4, +2, +1.
__device__ __forceinline__ float tree8(float acc) {
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 4, 8));
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 2, 8));
  acc = __fadd_rn(acc, __shfl_down_sync(0xffffffffu, acc, 1, 8));
  return acc;
}

}  // namespace tzero::cuda
