// CUDA matmuls in the dot-v1 orders (kernels/dot.h), one output element per lane group:
//   float weights (f32, f16, bf16): 16 lanes of a half warp; lane l accumulates k = l, l+16, ...
//     with __fmaf_rn from +0, then tree16 (+8, +4, +2, +1), exactly dot_lanes16 of dot.cpp.
//   q8_0 / q4_0: 8 lanes; lane l takes blocks b = l, l+8, ... in increasing b: exact int32
//     block sum (dp4a), p = d_w * d_x, acc = fma(p, float(isum), acc); then tree8.
//   q4_k / q6_k: 8 lanes over super-blocks, exact int32 A (and B) per super-block, acc (and
//     accm) as above; result tree8(acc) - tree8(accm).
// A group reuses each weight load for a tile of kTokTile tokens, each with its own accumulator,
// so a (row, token) element is computed the same way whatever the batch (batch invariance).
// Groups past the last row recompute the last row and do not store (shuffles need full warps).
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace tzero::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kTokTile = 4;

struct WF32 {
  static __device__ __forceinline__ float at(const uint8_t* row, size_t k) {
    return reinterpret_cast<const float*>(row)[k];
  }
};
struct WF16 {
  static __device__ __forceinline__ float at(const uint8_t* row, size_t k) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};
struct WBF16 {
  static __device__ __forceinline__ float at(const uint8_t* row, size_t k) {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
  }
};

template <typename W>
__global__ void gemm_float_kernel(const uint8_t* __restrict__ w, size_t w_row_bytes,
                                  const float* __restrict__ x, size_t n, size_t n_rows,
                                  size_t n_tok, float* __restrict__ y, size_t ldy) {
  const int lane = threadIdx.x & 15;
  const size_t r_want = size_t(blockIdx.x) * (kThreads / 16) + threadIdx.x / 16;
  const bool store = r_want < n_rows;
  const size_t r = store ? r_want : n_rows - 1;
  const uint8_t* wr = w + r * w_row_bytes;
  for (size_t t0 = 0; t0 < n_tok; t0 += kTokTile) {
    const int nt = int(n_tok - t0 < kTokTile ? n_tok - t0 : kTokTile);
    float acc[kTokTile] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t k = size_t(lane); k < n; k += 16) {
      const float wk = W::at(wr, k);
#pragma unroll
      for (int j = 0; j < kTokTile; ++j)
        if (j < nt) acc[j] = __fmaf_rn(wk, x[(t0 + j) * n + k], acc[j]);
    }
#pragma unroll
    for (int j = 0; j < kTokTile; ++j) {
      const float s = tree16(acc[j]);
      if (j < nt && lane == 0 && store) y[(t0 + j) * ldy + r] = s;
    }
  }
}

// Exact int32 sum of the 32 products of a q8_0 / q4_0 block with an ActQ8 block.
__device__ __forceinline__ int isum_q8_0(const uint8_t* blk, const ActQ8& xb) {
  const int* xq = reinterpret_cast<const int*>(xb.qs);
  int s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = __dp4a(load_i32_a2(blk + 2 + 4 * i), xq[i], s);
  return s;
}
__device__ __forceinline__ int isum_q4_0(const uint8_t* blk, const ActQ8& xb) {
  const int* xq = reinterpret_cast<const int*>(xb.qs);
  int s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned v = unsigned(load_i32_a2(blk + 2 + 4 * i));
    const int lo = int(__vsub4(v & 0x0f0f0f0fu, 0x08080808u));
    const int hi = int(__vsub4((v >> 4) & 0x0f0f0f0fu, 0x08080808u));
    s = __dp4a(lo, xq[i], s);
    s = __dp4a(hi, xq[i + 4], s);
  }
  return s;
}

template <int kBlockBytes, bool kQ4>
__global__ void gemm_q_kernel(const uint8_t* __restrict__ w, size_t w_row_bytes,
                              const ActQ8* __restrict__ x, size_t n, size_t n_rows, size_t n_tok,
                              float* __restrict__ y, size_t ldy) {
  const int lane = threadIdx.x & 7;
  const size_t r_want = size_t(blockIdx.x) * (kThreads / 8) + threadIdx.x / 8;
  const bool store = r_want < n_rows;
  const size_t r = store ? r_want : n_rows - 1;
  const uint8_t* wr = w + r * w_row_bytes;
  const size_t nb = n / kQBlock;
  for (size_t t0 = 0; t0 < n_tok; t0 += kTokTile) {
    const int nt = int(n_tok - t0 < kTokTile ? n_tok - t0 : kTokTile);
    float acc[kTokTile] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t b = size_t(lane); b < nb; b += 8) {
      const uint8_t* blk = wr + b * kBlockBytes;
      const float dw = f16_to_f32(load_u16(blk));
#pragma unroll
      for (int j = 0; j < kTokTile; ++j)
        if (j < nt) {
          const ActQ8& xb = x[(t0 + j) * nb + b];
          const int is = kQ4 ? isum_q4_0(blk, xb) : isum_q8_0(blk, xb);
          acc[j] = __fmaf_rn(__fmul_rn(dw, xb.d), __int2float_rn(is), acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < kTokTile; ++j) {
      const float s = tree8(acc[j]);
      if (j < nt && lane == 0 && store) y[(t0 + j) * ldy + r] = s;
    }
  }
}

// q4_k_block_ints of kernels/dot_k.cpp: A = sum_j sc[j] * sum(q * x_q), B = sum_j m[j] *
// (bsums[2j] + bsums[2j+1]), both exact.
__device__ __forceinline__ void q4_k_ints(const BlockQ4_K& wb, const ActQ8K& xb, int* a, int* b) {
  int sa = 0, sb = 0;
#pragma unroll 1
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    const uint8_t* s = wb.scales;
    if (j < 4) {
      sc = s[j] & 63;
      m = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
      m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    const int* qw = reinterpret_cast<const int*>(wb.qs + 32 * (j / 2));
    const int* xq = reinterpret_cast<const int*>(xb.qs + 32 * j);
    const int shift = 4 * (j & 1);
    int is = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      is = __dp4a(int((unsigned(qw[i]) >> shift) & 0x0f0f0f0fu), xq[i], is);
    sa += sc * is;
    sb += m * (int(xb.bsums[2 * j]) + int(xb.bsums[2 * j + 1]));
  }
  *a = sa;
  *b = sb;
}

// q6_k_block_int of kernels/dot_k.cpp: A = sum_i scales[i] * sum((q - 32) * x_q), exact.
__device__ __forceinline__ int q6_k_int(const uint8_t* wb, const ActQ8K& xb) {
  const uint8_t* ql = wb;
  const uint8_t* qh = wb + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(wb + 192);
  int sa = 0;
#pragma unroll 1
  for (int i = 0; i < 16; ++i) {
    const int h = i / 8, g = (i % 8) / 2, l0 = 16 * (i % 2);
    const int* xq = reinterpret_cast<const int*>(xb.qs + 16 * i);
    int is = 0;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int l = l0 + 4 * c;
      const unsigned lo = unsigned(load_i32_a2(ql + 64 * h + l + 32 * (g & 1)));
      const unsigned hi = unsigned(load_i32_a2(qh + 32 * h + l));
      const unsigned low4 = (g < 2 ? lo : lo >> 4) & 0x0f0f0f0fu;
      const unsigned high2 = (hi >> (2 * g)) & 0x03030303u;
      const int q = int(__vsub4(low4 | (high2 << 4), 0x20202020u));
      is = __dp4a(q, xq[c], is);
    }
    sa += int(scales[i]) * is;
  }
  return sa;
}

template <bool kQ4K>
__global__ void gemm_k_kernel(const uint8_t* __restrict__ w, size_t w_row_bytes,
                              const ActQ8K* __restrict__ x, size_t n, size_t n_rows, size_t n_tok,
                              float* __restrict__ y, size_t ldy) {
  constexpr int kBytes = kQ4K ? int(sizeof(BlockQ4_K)) : int(sizeof(BlockQ6_K));
  const int lane = threadIdx.x & 7;
  const size_t r_want = size_t(blockIdx.x) * (kThreads / 8) + threadIdx.x / 8;
  const bool store = r_want < n_rows;
  const size_t r = store ? r_want : n_rows - 1;
  const uint8_t* wr = w + r * w_row_bytes;
  const size_t nb = n / kSuperBlock;
  for (size_t t = 0; t < n_tok; ++t) {
    float acc = 0.0f, accm = 0.0f;
    for (size_t b = size_t(lane); b < nb; b += 8) {
      const uint8_t* blk = wr + b * kBytes;
      const ActQ8K& xb = x[t * nb + b];
      if constexpr (kQ4K) {
        const BlockQ4_K& wb = *reinterpret_cast<const BlockQ4_K*>(blk);
        int a, m;
        q4_k_ints(wb, xb, &a, &m);
        const float p = __fmul_rn(f16_to_f32(wb.d), xb.d);
        const float pm = __fmul_rn(f16_to_f32(wb.dmin), xb.d);
        acc = __fmaf_rn(p, __int2float_rn(a), acc);
        accm = __fmaf_rn(pm, __int2float_rn(m), accm);
      } else {
        const float p = __fmul_rn(f16_to_f32(load_u16(blk + 208)), xb.d);
        acc = __fmaf_rn(p, __int2float_rn(q6_k_int(blk, xb)), acc);
      }
    }
    const float s = tree8(acc);
    const float sm = tree8(accm);
    if (lane == 0 && store) y[t * ldy + r] = kQ4K ? __fsub_rn(s, sm) : s;
  }
}

}  // namespace

void gemm(TensorType type, const void* d_w, size_t w_row_bytes, const void* d_x, size_t n_cols,
          size_t n_rows, size_t n_tok, float* d_y, size_t ldy) {
  if (n_rows == 0 || n_tok == 0) return;
  const uint8_t* w = static_cast<const uint8_t*>(d_w);
  const unsigned g16 = blocks_for(n_rows, kThreads / 16), g8 = blocks_for(n_rows, kThreads / 8);
  const float* xf = static_cast<const float*>(d_x);
  const ActQ8* xq = static_cast<const ActQ8*>(d_x);
  const ActQ8K* xk = static_cast<const ActQ8K*>(d_x);
  switch (type) {
    case TensorType::F32:
      gemm_float_kernel<WF32>
          <<<g16, kThreads>>>(w, w_row_bytes, xf, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::F16:
      gemm_float_kernel<WF16>
          <<<g16, kThreads>>>(w, w_row_bytes, xf, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::BF16:
      gemm_float_kernel<WBF16>
          <<<g16, kThreads>>>(w, w_row_bytes, xf, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::Q8_0:
      gemm_q_kernel<int(sizeof(BlockQ8_0)), false>
          <<<g8, kThreads>>>(w, w_row_bytes, xq, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::Q4_0:
      gemm_q_kernel<int(sizeof(BlockQ4_0)), true>
          <<<g8, kThreads>>>(w, w_row_bytes, xq, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::Q4_K:
      gemm_k_kernel<true><<<g8, kThreads>>>(w, w_row_bytes, xk, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    case TensorType::Q6_K:
      gemm_k_kernel<false><<<g8, kThreads>>>(w, w_row_bytes, xk, n_cols, n_rows, n_tok, d_y, ldy);
      break;
    default:
      throw Error(std::string("CUDA matmul: no kernel for ") + traits(type).name);
  }
  TZ_CUDA_LAUNCHED("gemm");
}

}  // namespace tzero::cuda
