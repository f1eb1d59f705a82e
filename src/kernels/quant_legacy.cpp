#include "kernels/quant_legacy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"

namespace tzero {

namespace {

constexpr int kBlock = 32;

// Element i's nibble: the low one of qs[i] for i < 16, the high one of qs[i - 16] otherwise.
inline int nibble(const uint8_t* qs, int i) {
  return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
}

inline int fifth_bit(const uint8_t* qh, int i) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return int((h >> i) & 1u) << 4;
}

inline void pack_nibbles(const int* q, uint8_t* qs) {
  for (int i = 0; i < 16; ++i) qs[i] = uint8_t((q[i] & 15) | ((q[i + 16] & 15) << 4));
}

inline void pack_fifth_bits(const int* q, uint8_t* qh) {
  uint32_t h = 0;
  for (int i = 0; i < kBlock; ++i) h |= uint32_t((q[i] >> 4) & 1) << i;
  std::memcpy(qh, &h, 4);
}

// The element of largest magnitude (the first one on a tie), signed.
float signed_absmax(const float* x) {
  float amax = 0, v = 0;
  for (int i = 0; i < kBlock; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      v = x[i];
    }
  return v;
}

// Index of the table entry nearest v (the lower index on a tie).
int nearest_index(const int8_t* table, float v) {
  int best = 0;
  float best_err = std::fabs(v - float(table[0]));
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(v - float(table[i]));
    if (err < best_err) {
      best_err = err;
      best = i;
    }
  }
  return best;
}

// Q4_1 and Q5_1: q in [0, levels] from lo and d = (hi - lo) / levels.
void quantize_with_min(const float* x, int levels, int* q, float* d_out, float* m_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kBlock; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float d = (hi - lo) / float(levels);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int i = 0; i < kBlock; ++i) q[i] = std::min(levels, int((x[i] - lo) * id + 0.5f));
  *d_out = d;
  *m_out = lo;
}

template <typename Block>
void dequantize_ints(const Block* b, float* dst, size_t n) {
  int8_t w[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    block_ints(b[k], w);
    const float d = fp16_to_float(b[k].d);
    for (int i = 0; i < kBlock; ++i) dst[k * kBlock + i] = d * float(w[i]);
  }
}

template <typename Block>
void dequantize_ints_min(const Block* b, float* dst, size_t n) {
  int8_t w[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    block_ints(b[k], w);
    const float d = fp16_to_float(b[k].d), m = fp16_to_float(b[k].m);
    for (int i = 0; i < kBlock; ++i) dst[k * kBlock + i] = d * float(w[i]) + m;
  }
}

}  // namespace

void block_ints(const BlockQ4_1& b, int8_t* w) {
  for (int i = 0; i < kBlock; ++i) w[i] = int8_t(nibble(b.qs, i));
}
void block_ints(const BlockQ5_0& b, int8_t* w) {
  for (int i = 0; i < kBlock; ++i) w[i] = int8_t((nibble(b.qs, i) | fifth_bit(b.qh, i)) - 16);
}
void block_ints(const BlockQ5_1& b, int8_t* w) {
  for (int i = 0; i < kBlock; ++i) w[i] = int8_t(nibble(b.qs, i) | fifth_bit(b.qh, i));
}
void block_ints(const BlockIQ4_NL& b, int8_t* w) {
  for (int i = 0; i < kBlock; ++i) w[i] = kIq4nlValues[nibble(b.qs, i)];
}
void block_ints(const BlockMXFP4& b, int8_t* w) {
  for (int i = 0; i < kBlock; ++i) w[i] = kMxfp4Values[nibble(b.qs, i)];
}

void dequantize_row_q4_1(const BlockQ4_1* b, float* dst, size_t n) {
  dequantize_ints_min(b, dst, n);
}
void dequantize_row_q5_0(const BlockQ5_0* b, float* dst, size_t n) {
  dequantize_ints(b, dst, n);
}
void dequantize_row_q5_1(const BlockQ5_1* b, float* dst, size_t n) {
  dequantize_ints_min(b, dst, n);
}
void dequantize_row_iq4_nl(const BlockIQ4_NL* b, float* dst, size_t n) {
  dequantize_ints(b, dst, n);
}
void dequantize_row_mxfp4(const BlockMXFP4* b, float* dst, size_t n) {
  int8_t w[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    block_ints(b[k], w);
    const float d = e8m0_half_to_float(b[k].e);
    for (int i = 0; i < kBlock; ++i) dst[k * kBlock + i] = float(w[i]) * d;
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* b, size_t n) {
  int q[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    float d, m;
    quantize_with_min(x + k * kBlock, 15, q, &d, &m);
    b[k].d = float_to_fp16(d);
    b[k].m = float_to_fp16(m);
    pack_nibbles(q, b[k].qs);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* b, size_t n) {
  int q[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    float d, m;
    quantize_with_min(x + k * kBlock, 31, q, &d, &m);
    b[k].d = float_to_fp16(d);
    b[k].m = float_to_fp16(m);
    pack_nibbles(q, b[k].qs);
    pack_fifth_bits(q, b[k].qh);
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* b, size_t n) {
  int q[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    const float* xb = x + k * kBlock;
    const float d = signed_absmax(xb) / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int i = 0; i < kBlock; ++i) q[i] = std::min(31, int(xb[i] * id + 16.5f));
    b[k].d = float_to_fp16(d);
    pack_nibbles(q, b[k].qs);
    pack_fifth_bits(q, b[k].qh);
  }
}

void quantize_row_iq4_nl(const float* x, BlockIQ4_NL* b, size_t n) {
  int q[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    const float* xb = x + k * kBlock;
    const float d = signed_absmax(xb) / -127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (int i = 0; i < kBlock; ++i) q[i] = nearest_index(kIq4nlValues, xb[i] * id);
    b[k].d = float_to_fp16(d);
    pack_nibbles(q, b[k].qs);
  }
}

void quantize_row_mxfp4(const float* x, BlockMXFP4* b, size_t n) {
  int q[kBlock];
  for (size_t k = 0; k < n / kBlock; ++k) {
    const float* xb = x + k * kBlock;
    float amax = 0;
    for (int i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    int e = 0;
    if (amax > 0) {
      int exp2;
      std::frexp(amax, &exp2);  // amax = f * 2^exp2, f in [0.5, 1): floor(log2 amax) = exp2 - 1
      e = std::clamp(exp2 - 1 - 2 + 127, 0, 255);
    }
    const float d = e8m0_half_to_float(uint8_t(e));
    for (int i = 0; i < kBlock; ++i) q[i] = nearest_index(kMxfp4Values, xb[i] / d);
    b[k].e = uint8_t(e);
    pack_nibbles(q, b[k].qs);
  }
}

}  // namespace tzero
