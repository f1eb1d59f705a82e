// CUDA kernels of the non-matmul ops, each the CPU scalar reference's order (ops-v1, exp-v1,
// silu-v1, dot-v1 activation quantization): see the contracts in backend/cuda/cuda_kernels.h.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace tzero::cuda {

namespace {

constexpr unsigned kThreads = 256;

// quantize_act_q8: per block of 32, d = max|x| / 127, q = nearbyint(x * (1/d)). One thread per
// block (max is order-free).
__global__ void quantize_q8_kernel(const float* __restrict__ x, ActQ8* __restrict__ dst,
                                   size_t n_blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  const float* xb = x + b * kQBlock;
  float amax = 0.0f;
  for (int i = 0; i < kQBlock; ++i) amax = fmaxf(amax, fabsf(xb[i]));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  dst[b].d = d;
  for (int i = 0; i < kQBlock; ++i) dst[b].qs[i] = int8_t(int(rintf(__fmul_rn(xb[i], id))));
}

// quantize_act_q8k: per 256 block, as above, plus exact sums of 16 consecutive quants.
__global__ void quantize_q8k_kernel(const float* __restrict__ x, ActQ8K* __restrict__ dst,
                                    size_t n_blocks) {
  const size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  const float* xb = x + b * kSuperBlock;
  float amax = 0.0f;
  for (int i = 0; i < kSuperBlock; ++i) amax = fmaxf(amax, fabsf(xb[i]));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  dst[b].d = d;
  for (int g = 0; g < 16; ++g) {
    int s = 0;
    for (int l = 0; l < 16; ++l) {
      const int q = int(rintf(__fmul_rn(xb[16 * g + l], id)));
      dst[b].qs[16 * g + l] = int8_t(q);
      s += int(int8_t(q));
    }
    dst[b].bsums[g] = int16_t(s);
  }
}

// rmsnorm_ref: ss = dot-v1(x, x) over a half warp; scale = 1 / sqrt(ss / n + eps);
// out = (x * scale) * w. Two rows per warp.
__global__ void rmsnorm_kernel(const float* x, const float* __restrict__ w, float eps, size_t n,
                               size_t n_rows, float* out) {
  const int lane = threadIdx.x & 15;
  const size_t r_want = size_t(blockIdx.x) * (blockDim.x / 16) + threadIdx.x / 16;
  const bool active = r_want < n_rows;
  const size_t r = active ? r_want : n_rows - 1;
  const float* xr = x + r * n;
  float acc = 0.0f;
  for (size_t k = size_t(lane); k < n; k += 16) acc = __fmaf_rn(xr[k], xr[k], acc);
  const float ss = __shfl_sync(0xffffffffu, tree16(acc), 0, 16);
  const float mean = __fdiv_rn(ss, float(n));
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  if (!active) return;
  float* o = out + r * n;
  for (size_t k = size_t(lane); k < n; k += 16) o[k] = __fmul_rn(__fmul_rn(xr[k], scale), w[k]);
}

// rope_ref: one thread per (token, head, pair). a' = a*c - b*s, b' = a*s + b*c, no FMA.
__global__ void rope_kernel(float* x, const int32_t* __restrict__ pos, size_t n_tok, int n_heads,
                            int head_dim, size_t stride, const float* __restrict__ table, int n_rot,
                            bool neox) {
  const int half = n_rot / 2;
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tok * size_t(n_heads) * size_t(half)) return;
  const size_t t = i / (size_t(n_heads) * half);
  const int h = int(i / half % size_t(n_heads)), p = int(i % half);
  float* v = x + t * stride + size_t(h) * head_dim;
  const float* cs = table + size_t(pos[t]) * n_rot;
  const int ia = neox ? p : 2 * p, ib = neox ? p + half : 2 * p + 1;
  const float c = cs[2 * p], s = cs[2 * p + 1], a = v[ia], b = v[ib];
  v[ia] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  v[ib] = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
}

__global__ void swiglu_kernel(const float* gate, const float* up, size_t n, float* out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmul_rn(silu_v1(gate[i]), up[i]);
}

__global__ void add_kernel(float* x, const float* __restrict__ y, size_t n) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __fadd_rn(x[i], y[i]);
}

__global__ void add_bias_kernel(float* y, const float* __restrict__ b, size_t n, size_t len) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __fadd_rn(y[i], b[i % len]);
}

// dequantize_row of one element e of a row (kernels/quant.cpp, quant_k.cpp).
__device__ float dequant_at(TensorType type, const uint8_t* row, size_t e) {
  switch (type) {
    case TensorType::F32:
      return reinterpret_cast<const float*>(row)[e];
    case TensorType::F16:
      return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
    case TensorType::BF16:
      return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[e]);
    case TensorType::Q8_0: {
      const uint8_t* blk = row + (e / kQBlock) * sizeof(BlockQ8_0);
      const float q = float(int(int8_t(blk[2 + e % kQBlock])));
      return __fmul_rn(f16_to_f32(load_u16(blk)), q);
    }
    case TensorType::Q4_0: {
      const uint8_t* blk = row + (e / kQBlock) * sizeof(BlockQ4_0);
      const int i = int(e % kQBlock);
      const uint8_t byte = blk[2 + (i & 15)];
      const int q = (i < 16 ? (byte & 15) : (byte >> 4)) - 8;
      return __fmul_rn(f16_to_f32(load_u16(blk)), float(q));
    }
    case TensorType::Q4_K: {
      const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[e / kSuperBlock];
      const int el = int(e % kSuperBlock), j = el / 32, c = el / 64, l = el % 64;
      const uint8_t* s = b.scales;
      int sc, m;
      if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
      } else {
        sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      }
      const int q = l < 32 ? (b.qs[32 * c + l] & 15) : (b.qs[32 * c + l - 32] >> 4);
      const float d1 = __fmul_rn(f16_to_f32(b.d), float(sc));
      const float m1 = __fmul_rn(f16_to_f32(b.dmin), float(m));
      return __fsub_rn(__fmul_rn(d1, float(q)), m1);
    }
    case TensorType::Q6_K: {
      const uint8_t* b = row + (e / kSuperBlock) * sizeof(BlockQ6_K);
      const int el = int(e % kSuperBlock), h = el / 128, g = (el % 128) / 32, l = el % 32;
      const uint8_t lo = b[64 * h + l + 32 * (g & 1)];
      const int low4 = g < 2 ? (lo & 15) : (lo >> 4);
      const int high2 = (b[128 + 32 * h + l] >> (2 * g)) & 3;
      const int q = low4 | (high2 << 4);
      const float d1 = __fmul_rn(f16_to_f32(load_u16(b + 208)),
                                 float(int(reinterpret_cast<const int8_t*>(b + 192)[el / 16])));
      return __fmul_rn(d1, float(q - 32));
    }
    default:
      return __int_as_float(0x7fc00000);
  }
}

__global__ void embed_kernel(TensorType type, const uint8_t* __restrict__ w, size_t row_bytes,
                             size_t n_cols, const int32_t* __restrict__ tokens, size_t n_tok,
                             float* __restrict__ out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tok * n_cols) return;
  const size_t t = i / n_cols, e = i % n_cols;
  out[i] = dequant_at(type, w + size_t(tokens[t]) * row_bytes, e);
}

__global__ void gather_kernel(const float* __restrict__ x, const int32_t* __restrict__ rows,
                              size_t n, size_t len, float* __restrict__ out) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * len) out[i] = x[size_t(rows[i / len]) * len + i % len];
}

}  // namespace

void quantize_act_q8(const float* d_x, void* d_dst, size_t n_tok, size_t n) {
  const size_t nb = n_tok * (n / kQBlock);
  if (nb == 0) return;
  quantize_q8_kernel<<<blocks_for(nb, 128), 128>>>(d_x, static_cast<ActQ8*>(d_dst), nb);
  TZ_CUDA_LAUNCHED("quantize_act_q8");
}

void quantize_act_q8k(const float* d_x, void* d_dst, size_t n_tok, size_t n) {
  const size_t nb = n_tok * (n / kSuperBlock);
  if (nb == 0) return;
  quantize_q8k_kernel<<<blocks_for(nb, 64), 64>>>(d_x, static_cast<ActQ8K*>(d_dst), nb);
  TZ_CUDA_LAUNCHED("quantize_act_q8k");
}

void rmsnorm(const float* d_x, const float* d_w, float eps, size_t n, size_t n_rows, float* d_out) {
  if (n_rows == 0) return;
  rmsnorm_kernel<<<blocks_for(n_rows, 8), 128>>>(d_x, d_w, eps, n, n_rows, d_out);
  TZ_CUDA_LAUNCHED("rmsnorm");
}

void rope(float* d_x, const int32_t* d_pos, size_t n_tok, int n_heads, int head_dim, size_t stride,
          const float* d_table, int n_rot, bool neox) {
  const size_t n = n_tok * size_t(n_heads) * size_t(n_rot / 2);
  if (n == 0) return;
  rope_kernel<<<blocks_for(n, kThreads), kThreads>>>(d_x, d_pos, n_tok, n_heads, head_dim, stride,
                                                     d_table, n_rot, neox);
  TZ_CUDA_LAUNCHED("rope");
}

void swiglu(const float* d_gate, const float* d_up, size_t n, float* d_out) {
  if (n == 0) return;
  swiglu_kernel<<<blocks_for(n, kThreads), kThreads>>>(d_gate, d_up, n, d_out);
  TZ_CUDA_LAUNCHED("swiglu");
}

void add(float* d_x, const float* d_y, size_t n) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n, kThreads), kThreads>>>(d_x, d_y, n);
  TZ_CUDA_LAUNCHED("add");
}

void add_bias(float* d_y, const float* d_b, size_t n_tok, size_t len) {
  const size_t n = n_tok * len;
  if (n == 0) return;
  add_bias_kernel<<<blocks_for(n, kThreads), kThreads>>>(d_y, d_b, n, len);
  TZ_CUDA_LAUNCHED("add_bias");
}

void embed(TensorType type, const void* d_w, size_t row_bytes, size_t n_cols,
           const int32_t* d_tokens, size_t n_tok, float* d_out) {
  const size_t n = n_tok * n_cols;
  if (n == 0) return;
  embed_kernel<<<blocks_for(n, kThreads), kThreads>>>(type, static_cast<const uint8_t*>(d_w),
                                                      row_bytes, n_cols, d_tokens, n_tok, d_out);
  TZ_CUDA_LAUNCHED("embed");
}

void gather_rows(const float* d_x, const int32_t* d_rows, size_t n, size_t len, float* d_out) {
  if (n * len == 0) return;
  gather_kernel<<<blocks_for(n * len, kThreads), kThreads>>>(d_x, d_rows, n, len, d_out);
  TZ_CUDA_LAUNCHED("gather_rows");
}

}  // namespace tzero::cuda
