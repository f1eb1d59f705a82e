// CUDA paged KV writes and attention in the attn-v2 order (kernels/attention.h):
// one thread block per (token, query head):
//   1. s[t] = dot-v1(q, k_t) * scale: each half warp computes whole dots (16 lanes + tree16),
//      the half warps taking t = g, g + 8, ... (which one computes s[t] does not change it);
//   2. m = max s (order-free); e[t] = exp_v1(s[t] - m);
//   3. per position block of kAttnBlock: z_j = sum_f32_ref(e of the block) (lane l of warp 0
//      adds e[t] for t = t0 + l mod 16 ascending, then tree16); z = z_0 + z_1 + ... in order;
//   4. per output element d (one thread): o_j[d] = fma chain over the block's t ascending from
//      +0.0, o[d] = o_0[d] + o_1[d] + ... in order; out[d] = o[d] / z.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "kernels/attention.h"

namespace tzero::cuda {

namespace {

constexpr int kAttnThreads = 128;

template <bool kF16>
struct KvRef {
  using T = typename std::conditional<kF16, uint16_t, float>::type;
  const T* store;
  int n_layer, block_size;
  size_t kv_dim;
  // Row of position t of a sequence (block table `table`), for `which` (0 K, 1 V), at `col`.
  __device__ __forceinline__ const T* row(const int32_t* table, int layer, int which, int t,
                                          size_t col) const {
    const size_t block = size_t(table[t / block_size]);
    return store +
           (((block * 2 + size_t(which)) * size_t(n_layer) + size_t(layer)) * size_t(block_size) +
            size_t(t % block_size)) *
               kv_dim +
           col;
  }
  static __device__ __forceinline__ float widen(T v) {
    if constexpr (kF16)
      return f16_to_f32(v);
    else
      return v;
  }
};

template <bool kF16>
__global__ void kv_write_kernel(KvRef<kF16> kv, int layer, const float* __restrict__ k,
                                const float* __restrict__ v, const int32_t* __restrict__ blk,
                                const int32_t* __restrict__ slot, size_t n_tok) {
  using T = typename KvRef<kF16>::T;
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tok * kv.kv_dim) return;
  const size_t t = i / kv.kv_dim, c = i % kv.kv_dim;
  T* store = const_cast<T*>(kv.store);
  for (int which = 0; which < 2; ++which) {
    const size_t off =
        (((size_t(blk[t]) * 2 + size_t(which)) * size_t(kv.n_layer) + size_t(layer)) *
             size_t(kv.block_size) +
         size_t(slot[t])) *
            kv.kv_dim +
        c;
    const float val = which == 0 ? k[i] : v[i];
    if constexpr (kF16)
      store[off] = __half_as_ushort(__float2half_rn(val));
    else
      store[off] = val;
  }
}

template <bool kF16>
__global__ void attention_kernel(KvRef<kF16> kv, int layer, const float* __restrict__ q,
                                 const int32_t* __restrict__ pos, const int32_t* __restrict__ seq,
                                 const int32_t* __restrict__ tables,
                                 const int32_t* __restrict__ table_off, int n_head, int n_head_kv,
                                 int head_dim, float scale, float* __restrict__ scratch,
                                 size_t max_kv, float* __restrict__ out) {
  __shared__ float red[kAttnThreads / 32];
  __shared__ float shared_z;
  const size_t t_tok = blockIdx.x / unsigned(n_head);
  const int h = int(blockIdx.x % unsigned(n_head));
  const int kvh = h / (n_head / n_head_kv);
  const int n_kv = pos[t_tok] + 1;
  const int32_t* table = tables + table_off[seq[t_tok]];
  const float* qh = q + (t_tok * size_t(n_head) + size_t(h)) * size_t(head_dim);
  float* s = scratch + (t_tok * size_t(n_head) + size_t(h)) * max_kv;
  const int lane16 = threadIdx.x & 15, group = threadIdx.x / 16;
  constexpr int kGroups = kAttnThreads / 16;
  const size_t col = size_t(kvh) * size_t(head_dim);

  // 1. Scores. Every half warp runs the same number of iterations (full-warp shuffles).
  for (int t0 = 0; t0 < n_kv; t0 += kGroups) {
    const int t_want = t0 + group;
    const int t = t_want < n_kv ? t_want : n_kv - 1;
    const auto* kr = kv.row(table, layer, 0, t, col);
    float acc = 0.0f;
    for (int d = lane16; d < head_dim; d += 16)
      acc = __fmaf_rn(qh[d], KvRef<kF16>::widen(kr[d]), acc);
    acc = tree16(acc);
    if (lane16 == 0 && t_want < n_kv) s[t] = __fmul_rn(acc, scale);
  }
  __syncthreads();

  // 2. Max (order-free), then e[t].
  float m = -__int_as_float(0x7f800000);
  for (int t = threadIdx.x; t < n_kv; t += kAttnThreads) m = fmaxf(m, s[t]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < kAttnThreads / 32; ++w) m = fmaxf(m, red[w]);
  for (int t = threadIdx.x; t < n_kv; t += kAttnThreads) s[t] = exp_v1(__fsub_rn(s[t], m));
  __syncthreads();

  // 3. z: per block in the 16-lane order, blocks added in order (warp 0; its upper half
  // duplicates the lower half's work).
  constexpr int kBlock = int(kAttnBlock);
  if (threadIdx.x < 32) {
    float z_all = 0.0f;
    for (int t0 = 0; t0 < n_kv; t0 += kBlock) {
      const int t1 = t0 + kBlock < n_kv ? t0 + kBlock : n_kv;
      float acc = 0.0f;
      for (int t = t0 + lane16; t < t1; t += 16) acc = __fadd_rn(acc, s[t]);
      acc = tree16(acc);
      z_all = t0 == 0 ? acc : __fadd_rn(z_all, acc);
    }
    if (threadIdx.x == 0) shared_z = z_all;
  }
  __syncthreads();
  const float z = shared_z;

  // 4. Weighted values, t ascending per output element.
  float* o = out + (t_tok * size_t(n_head) + size_t(h)) * size_t(head_dim);
  for (int d = threadIdx.x; d < head_dim; d += kAttnThreads) {
    float o_all = 0.0f;
    for (int t0 = 0; t0 < n_kv; t0 += kBlock) {
      const int t1 = t0 + kBlock < n_kv ? t0 + kBlock : n_kv;
      float acc = 0.0f;
      for (int t = t0; t < t1; ++t)
        acc = __fmaf_rn(s[t], KvRef<kF16>::widen(kv.row(table, layer, 1, t, col)[d]), acc);
      o_all = t0 == 0 ? acc : __fadd_rn(o_all, acc);
    }
    o[d] = __fdiv_rn(o_all, z);
  }
}

}  // namespace

void kv_write(const KvGeom& g, int layer, const float* d_k, const float* d_v, const int32_t* d_blk,
              const int32_t* d_slot, size_t n_tok) {
  const size_t n = n_tok * g.kv_dim;
  if (n == 0) return;
  if (g.f16)
    kv_write_kernel<true><<<blocks_for(n, 256), 256>>>(
        KvRef<true>{static_cast<const uint16_t*>(g.d_store), g.n_layer, g.block_size, g.kv_dim},
        layer, d_k, d_v, d_blk, d_slot, n_tok);
  else
    kv_write_kernel<false><<<blocks_for(n, 256), 256>>>(
        KvRef<false>{static_cast<const float*>(g.d_store), g.n_layer, g.block_size, g.kv_dim},
        layer, d_k, d_v, d_blk, d_slot, n_tok);
  TZ_CUDA_LAUNCHED("kv_write");
}

void attention(const KvGeom& g, int layer, const float* d_q, const int32_t* d_pos,
               const int32_t* d_seq, const int32_t* d_tables, const int32_t* d_table_off,
               size_t n_tok, int n_head, int n_head_kv, int head_dim, float scale, float* d_scratch,
               size_t max_kv, float* d_out) {
  if (n_tok == 0) return;
  const unsigned grid = unsigned(n_tok * size_t(n_head));
  if (g.f16)
    attention_kernel<true><<<grid, kAttnThreads>>>(
        KvRef<true>{static_cast<const uint16_t*>(g.d_store), g.n_layer, g.block_size, g.kv_dim},
        layer, d_q, d_pos, d_seq, d_tables, d_table_off, n_head, n_head_kv, head_dim, scale,
        d_scratch, max_kv, d_out);
  else
    attention_kernel<false><<<grid, kAttnThreads>>>(
        KvRef<false>{static_cast<const float*>(g.d_store), g.n_layer, g.block_size, g.kv_dim},
        layer, d_q, d_pos, d_seq, d_tables, d_table_off, n_head, n_head_kv, head_dim, scale,
        d_scratch, max_kv, d_out);
  TZ_CUDA_LAUNCHED("attention");
}

}  // namespace tzero::cuda
