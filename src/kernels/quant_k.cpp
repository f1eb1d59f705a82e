#include "kernels/quant_k.h"

#include <algorithm>
#include <cmath>

#include "base/fp16.h"

namespace tzero {

void q4_k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

void q4_k_unpack(const BlockQ4_K& b, uint8_t* q) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = b.qs[32 * c + l] & 15;
      q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
    }
}

void q5_k_unpack(const BlockQ5_K& b, uint8_t* q) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = uint8_t((b.qs[32 * c + l] & 15) | (((b.qh[l] >> (2 * c)) & 1) << 4));
      q[64 * c + 32 + l] = uint8_t((b.qs[32 * c + l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4));
    }
}

void q6_k_unpack(const BlockQ6_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = b.ql[64 * h + l + 32 * (g & 1)];
        const int low4 = g < 2 ? (lo & 15) : (lo >> 4);
        const int high2 = (b.qh[32 * h + l] >> (2 * g)) & 3;
        q[128 * h + 32 * g + l] = uint8_t(low4 | (high2 << 4));
      }
}

namespace {
// The Q4_K / Q5_K value of element l of sub-block j: d*sc[j]*q - dmin*m[j].
template <typename Block, void (*Unpack)(const Block&, uint8_t*)>
void dequantize_row_k(const Block* x, float* y, size_t n) {
  uint8_t q[256];
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = fp16_to_float(x[b].d), dmin = fp16_to_float(x[b].dmin);
    Unpack(x[b], q);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(x[b].scales, j, &sc, &m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      for (int l = 0; l < 32; ++l) y[b * 256 + 32 * j + l] = d1 * float(q[32 * j + l]) - m1;
    }
  }
}
}  // namespace

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n) {
  dequantize_row_k<BlockQ4_K, q4_k_unpack>(x, y, n);
}

void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n) {
  dequantize_row_k<BlockQ5_K, q5_k_unpack>(x, y, n);
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n) {
  uint8_t q[256];
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float d = fp16_to_float(x[b].d);
    q6_k_unpack(x[b], q);
    for (int i = 0; i < 16; ++i) {
      const float d1 = d * float(x[b].scales[i]);
      for (int l = 0; l < 16; ++l) y[b * 256 + 16 * i + l] = d1 * float(int(q[16 * i + l]) - 32);
    }
  }
}

namespace {
// Per sub-block range fits with `levels` steps (15: Q4_K, 31: Q5_K): d, dmin and the packed
// scales into the block, the quants (0..levels) into q.
template <typename Block>
void quantize_k_scales(const float* xb, int levels, Block& y, uint8_t* q) {
  float scale[8], minv[8];
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = 0.0f;  // the range always includes 0, so mins are >= 0
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, xb[32 * j + l]);
      hi = std::max(hi, xb[32 * j + l]);
    }
    scale[j] = (hi - lo) / float(levels);
    minv[j] = -lo;
  }
  const float max_scale = *std::max_element(scale, scale + 8);
  const float max_min = *std::max_element(minv, minv + 8);
  y.d = float_to_fp16(max_scale / 63.0f);
  y.dmin = float_to_fp16(max_min / 63.0f);
  const float d = fp16_to_float(y.d), dmin = fp16_to_float(y.dmin);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? std::clamp(int(std::lround(scale[j] / d)), 0, 63) : 0;
    m[j] = dmin > 0 ? std::clamp(int(std::lround(minv[j] / dmin)), 0, 63) : 0;
  }
  for (int j = 0; j < 4; ++j) {
    y.scales[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    y.scales[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    y.scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  for (int j = 0; j < 8; ++j) {
    const float d1 = d * float(sc[j]), m1 = dmin * float(m[j]);
    for (int l = 0; l < 32; ++l) {
      const float v = d1 > 0 ? (xb[32 * j + l] + m1) / d1 : 0.0f;
      q[32 * j + l] = uint8_t(std::clamp(int(std::lround(v)), 0, levels));
    }
  }
}
}  // namespace

void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    uint8_t q[256];
    quantize_k_scales(x + b * 256, 15, y[b], q);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    uint8_t q[256];
    quantize_k_scales(x + b * 256, 31, y[b], q);
    std::fill(y[b].qh, y[b].qh + 32, uint8_t(0));
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        y[b].qs[32 * c + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
        y[b].qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float* xb = x + b * 256;
    float scale[16];
    float max_abs_scale = 0.0f;
    for (int i = 0; i < 16; ++i) {
      float amax = 0.0f;
      for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(xb[16 * i + l]));
      scale[i] = amax / 31.0f;
      max_abs_scale = std::max(max_abs_scale, scale[i]);
    }
    y[b].d = float_to_fp16(max_abs_scale / 127.0f);
    const float d = fp16_to_float(y[b].d);
    uint8_t q[256];
    for (int i = 0; i < 16; ++i) {
      const int s = d > 0 ? std::clamp(int(std::lround(scale[i] / d)), -127, 127) : 0;
      y[b].scales[i] = int8_t(s);
      const float d1 = d * float(s);
      for (int l = 0; l < 16; ++l) {
        const float v = d1 != 0 ? xb[16 * i + l] / d1 : 0.0f;
        q[16 * i + l] = uint8_t(std::clamp(int(std::lround(v)), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l) {
        const uint8_t* e = q + 128 * h;
        y[b].ql[64 * h + l] = uint8_t((e[l] & 15) | ((e[64 + l] & 15) << 4));
        y[b].ql[64 * h + 32 + l] = uint8_t((e[32 + l] & 15) | ((e[96 + l] & 15) << 4));
        y[b].qh[32 * h + l] = uint8_t((e[l] >> 4) | ((e[32 + l] >> 4) << 2) |
                                      ((e[64 + l] >> 4) << 4) | ((e[96 + l] >> 4) << 6));
      }
  }
}

void quantize_act_q8k(const float* x, ActQ8K* dst, size_t n) {
  for (size_t b = 0; b < n / kSuperBlock; ++b) {
    const float* xb = x + b * 256;
    float amax = 0;
    for (int i = 0; i < 256; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = d;
    for (int i = 0; i < 256; ++i) dst[b].qs[i] = int8_t(std::nearbyint(xb[i] * id));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += dst[b].qs[16 * g + l];
      dst[b].bsums[g] = int16_t(s);
    }
  }
}

}  // namespace tzero
