// Host entry points of the CUDA kernels (compiled by nvcc in backend/cuda/*.cu; this header has
// no CUDA types, so plain C++ callers and the GPU tests use it). Every pointer named d_* is
// device memory; every call is ordered on one stream and returns once the work is enqueued;
// errors throw tzero::Error with the CUDA message.
//
// PORTABLE ORDERS: each kernel computes, for each output element, the canonical order of the
// CPU scalar reference named beside it (docs/DETERMINISM.md), operation for operation, with
// explicit __fmaf_rn / __fmul_rn / __fadd_rn and the device code compiled with -fmad=false
// -prec-div=true -prec-sqrt=true -ftz=false, so its bits are the CPU's. No reduction uses an
// atomic, and no launch configuration depends on the batch size except how many independent
// outputs it covers: an output element is computed the same way in any batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/tensor_type.h"

namespace tzero::cuda {

// ---- device and memory (cuda_runtime.cu) ----
int device_count();  // 0 when the driver or device is absent (never throws)
// Properties of device 0; false (and *why) when there is none or the driver fails. Never throws.
bool device_props(std::string* name, int* cc_major, int* cc_minor, size_t* memory_bytes,
                  std::string* why);
void* dev_alloc(size_t bytes);  // zeroed
void dev_free(void* p);
void to_device(void* d_dst, const void* src, size_t bytes);
void to_host(void* dst, const void* d_src, size_t bytes);
void dev_copy(void* d_dst, const void* d_src, size_t bytes);
void dev_zero(void* d_dst, size_t bytes);
void sync();  // waits for the stream; throws on a kernel error
// Best-of-reps copy bandwidth (GB/s, bytes read + written) over a buffer of `bytes`.
double copy_bandwidth(size_t bytes, int reps);

// ---- matmul (cuda_matmul.cu): gemm_*_ref of kernels/kernel_set.cpp ----
// d_y[t * ldy + r] = dot(weight row r, activation row t), r < n_rows, t < n_tok, the dot-v1
// order of the weight type (kernels/dot.h). d_x: f32 rows (float types), ActQ8 rows (q8_0,
// q4_0), ActQ8K rows (q4_k, q6_k). Throws for other types.
void gemm(TensorType type, const void* d_w, size_t w_row_bytes, const void* d_x, size_t n_cols,
          size_t n_rows, size_t n_tok, float* d_y, size_t ldy);

// ---- ops (cuda_ops.cu) ----
// quantize_act_q8 / quantize_act_q8k of kernels/quant*.h on n_tok rows of n floats.
void quantize_act_q8(const float* d_x, void* d_dst, size_t n_tok, size_t n);
void quantize_act_q8k(const float* d_x, void* d_dst, size_t n_tok, size_t n);
// rmsnorm_ref on n_rows rows of n floats (row stride n); d_out may alias d_x.
void rmsnorm(const float* d_x, const float* d_w, float eps, size_t n, size_t n_rows, float* d_out);
// rope_ref on n_heads head vectors of head_dim floats per token (token row stride `stride`),
// token t at position d_pos[t], with the CPU's table (n_pos rows of n_rot floats) on device.
void rope(float* d_x, const int32_t* d_pos, size_t n_tok, int n_heads, int head_dim, size_t stride,
          const float* d_table, int n_rot, bool neox);
// swiglu_ref over n elements; d_out may alias.
void swiglu(const float* d_gate, const float* d_up, size_t n, float* d_out);
// d_x[i] += d_y[i]; and add_bias of backend/cpu/cpu_backend.cpp: d_y[t * len + i] += d_b[i].
void add(float* d_x, const float* d_y, size_t n);
void add_bias(float* d_y, const float* d_b, size_t n_tok, size_t len);
// Embedding lookup: dequantize_row (kernels/quant.h) of row d_tokens[t] into d_out rows.
void embed(TensorType type, const void* d_w, size_t row_bytes, size_t n_cols,
           const int32_t* d_tokens, size_t n_tok, float* d_out);
// d_out[r] = d_x[d_rows[r]] (rows of len floats).
void gather_rows(const float* d_x, const int32_t* d_rows, size_t n, size_t len, float* d_out);

// ---- paged KV and attention (cuda_attention.cu) ----
// The device KV store: (n_blocks, 2 [K, V], n_layer, block_size, kv_dim) elements, f32 or f16
// (f16 rounds to nearest even, as float_to_fp16). Token t writes its K and V rows (kv_dim
// floats each, row stride kv_dim in d_k/d_v) at block d_blk[t], slot d_slot[t].
struct KvGeom {
  void* d_store;
  bool f16;
  int n_layer, block_size;
  size_t kv_dim;
};
void kv_write(const KvGeom& g, int layer, const float* d_k, const float* d_v, const int32_t* d_blk,
              const int32_t* d_slot, size_t n_tok);
// attention_head_ref (attn-v2) for every (token, query head): token t attends to positions
// 0..d_pos[t] of its sequence d_seq[t], whose block table starts at d_tables + d_table_off[seq].
// d_q: (n_tok, n_head * head_dim); d_out likewise; d_scratch: n_tok * n_head * max_kv floats
// where max_kv > every d_pos[t].
void attention(const KvGeom& g, int layer, const float* d_q, const int32_t* d_pos,
               const int32_t* d_seq, const int32_t* d_tables, const int32_t* d_table_off,
               size_t n_tok, int n_head, int n_head_kv, int head_dim, float scale, float* d_scratch,
               size_t max_kv, float* d_out);

}  // namespace tzero::cuda
