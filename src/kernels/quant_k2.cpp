#include "kernels/quant_k2.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"

namespace tzero {

void iq4_xs_unpack(const BlockIQ4_XS& b, int8_t* w) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 16; ++l) {
      w[32 * j + l] = kIQ4NLValues[b.qs[16 * j + l] & 15];
      w[32 * j + 16 + l] = kIQ4NLValues[b.qs[16 * j + l] >> 4];
    }
}

void iq4_xs_scales(const BlockIQ4_XS& b, int* sc) {
  for (int j = 0; j < 8; ++j)
    sc[j] =
        (((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

namespace {
// Q3_K's and Q2_K's 2-bit quant of element 128h + 32g + l.
inline int q2_of(const uint8_t* qs, int h, int g, int l) {
  return (qs[32 * h + l] >> (2 * g)) & 3;
}
}  // namespace

void q3_k_unpack(const BlockQ3_K& b, int8_t* w) {
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        const int hbit = (b.hmask[l] >> (4 * h + g)) & 1;
        w[128 * h + 32 * g + l] = int8_t(q2_of(b.qs, h, g, l) - (hbit ? 0 : 4));
      }
}

void q3_k_scales(const BlockQ3_K& b, int* sc) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? (b.scales[i] & 15) : (b.scales[i - 8] >> 4);
    const int high = (b.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
    sc[i] = (low | (high << 4)) - 32;
  }
}

void q2_k_unpack(const BlockQ2_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * g + l] = uint8_t(q2_of(b.qs, h, g, l));
}

void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n) {
  int8_t w[256];
  int sc[8];
  for (size_t b = 0; b < n / 256; ++b) {
    const float d = fp16_to_float(x[b].d);
    iq4_xs_unpack(x[b], w);
    iq4_xs_scales(x[b], sc);
    for (int j = 0; j < 8; ++j) {
      const float dl = d * float(sc[j]);
      for (int l = 0; l < 32; ++l) y[b * 256 + 32 * j + l] = dl * float(w[32 * j + l]);
    }
  }
}

void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n) {
  int8_t w[256];
  int sc[16];
  for (size_t b = 0; b < n / 256; ++b) {
    const float d = fp16_to_float(x[b].d);
    q3_k_unpack(x[b], w);
    q3_k_scales(x[b], sc);
    for (int i = 0; i < 16; ++i) {
      const float dl = d * float(sc[i]);
      for (int l = 0; l < 16; ++l) y[b * 256 + 16 * i + l] = dl * float(w[16 * i + l]);
    }
  }
}

void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n) {
  uint8_t q[256];
  for (size_t b = 0; b < n / 256; ++b) {
    const float d = fp16_to_float(x[b].d), dmin = fp16_to_float(x[b].dmin);
    q2_k_unpack(x[b], q);
    for (int i = 0; i < 16; ++i) {
      const float dl = d * float(x[b].scales[i] & 15), ml = dmin * float(x[b].scales[i] >> 4);
      for (int l = 0; l < 16; ++l) y[b * 256 + 16 * i + l] = dl * float(q[16 * i + l]) - ml;
    }
  }
}

namespace {
// The element of largest magnitude of x[0..n) (the first one on ties), signed.
float signed_amax(const float* x, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// Signed sub-block scales s[0..n) to a super-block d (f16) and 6-bit steps l in [-32, 31]: the
// scale of largest magnitude maps to -32.
uint16_t fit_signed_scales(const float* s, int n, int* l) {
  const float smax = signed_amax(s, n);
  const uint16_t dh = float_to_fp16(smax / -32.0f);
  const float d = fp16_to_float(dh);
  for (int i = 0; i < n; ++i) l[i] = d != 0 ? std::clamp(int(std::lround(s[i] / d)), -32, 31) : 0;
  return dh;
}

// Packs the 16 6-bit values v (0..63) as Q3_K stores its scales.
void pack_q3_k_scales(const int* v, uint8_t* scales) {
  std::memset(scales, 0, 12);
  for (int i = 0; i < 16; ++i) {
    if (i < 8)
      scales[i] |= uint8_t(v[i] & 15);
    else
      scales[i - 8] |= uint8_t((v[i] & 15) << 4);
    scales[8 + i % 4] |= uint8_t((v[i] >> 4) << (2 * (i / 4)));
  }
}
}  // namespace

void quantize_row_iq4_xs(const float* x, BlockIQ4_XS* y, size_t n) {
  for (size_t b = 0; b < n / 256; ++b) {
    const float* xb = x + b * 256;
    float s[8];
    for (int j = 0; j < 8; ++j) s[j] = signed_amax(xb + 32 * j, 32) / -127.0f;
    int l[8];
    y[b].d = fit_signed_scales(s, 8, l);
    const float d = fp16_to_float(y[b].d);
    y[b].scales_h = 0;
    std::memset(y[b].scales_l, 0, 4);
    for (int j = 0; j < 8; ++j) {
      const int ls = l[j] + 32;
      y[b].scales_l[j / 2] |= uint8_t((ls & 15) << (4 * (j % 2)));
      y[b].scales_h = uint16_t(y[b].scales_h | ((ls >> 4) << (2 * j)));
      const float dl = d * float(l[j]);
      for (int e = 0; e < 32; ++e) {
        int best = 0;  // the nearest level (the lower index on ties)
        if (dl != 0) {
          const float v = xb[32 * j + e] / dl;
          for (int k = 1; k < 16; ++k)
            if (std::fabs(v - float(kIQ4NLValues[k])) < std::fabs(v - float(kIQ4NLValues[best])))
              best = k;
        } else {
          best = 8;  // the level nearest 0
        }
        uint8_t& q = y[b].qs[16 * j + e % 16];
        q = e < 16 ? uint8_t((q & 0xf0) | best) : uint8_t((q & 0x0f) | (best << 4));
      }
    }
  }
}

void quantize_row_q3_k(const float* x, BlockQ3_K* y, size_t n) {
  for (size_t b = 0; b < n / 256; ++b) {
    const float* xb = x + b * 256;
    float s[16];
    for (int i = 0; i < 16; ++i) s[i] = signed_amax(xb + 16 * i, 16) / -4.0f;
    int l[16], v[16];
    y[b].d = fit_signed_scales(s, 16, l);
    const float d = fp16_to_float(y[b].d);
    for (int i = 0; i < 16; ++i) v[i] = l[i] + 32;
    pack_q3_k_scales(v, y[b].scales);
    std::memset(y[b].hmask, 0, 32);
    std::memset(y[b].qs, 0, 64);
    for (int e = 0; e < 256; ++e) {
      const float dl = d * float(l[e / 16]);
      const int q = dl != 0 ? std::clamp(int(std::lround(xb[e] / dl)), -4, 3) : 0;
      const int u = q + 4;  // q2 | hbit << 2
      const int h = e / 128, g = (e % 128) / 32, i = e % 32;
      y[b].qs[32 * h + i] |= uint8_t((u & 3) << (2 * g));
      y[b].hmask[i] |= uint8_t((u >> 2) << (e / 32));
    }
  }
}

void quantize_row_q2_k(const float* x, BlockQ2_K* y, size_t n) {
  for (size_t b = 0; b < n / 256; ++b) {
    const float* xb = x + b * 256;
    float scale[16], minv[16];
    for (int i = 0; i < 16; ++i) {
      float lo = 0.0f, hi = 0.0f;  // the range always includes 0, so mins are >= 0
      for (int k = 0; k < 16; ++k) {
        lo = std::min(lo, xb[16 * i + k]);
        hi = std::max(hi, xb[16 * i + k]);
      }
      scale[i] = (hi - lo) / 3.0f;
      minv[i] = -lo;
    }
    y[b].d = float_to_fp16(*std::max_element(scale, scale + 16) / 15.0f);
    y[b].dmin = float_to_fp16(*std::max_element(minv, minv + 16) / 15.0f);
    const float d = fp16_to_float(y[b].d), dmin = fp16_to_float(y[b].dmin);
    std::memset(y[b].qs, 0, 64);
    for (int i = 0; i < 16; ++i) {
      const int sc = d > 0 ? std::clamp(int(std::lround(scale[i] / d)), 0, 15) : 0;
      const int m = dmin > 0 ? std::clamp(int(std::lround(minv[i] / dmin)), 0, 15) : 0;
      y[b].scales[i] = uint8_t(sc | (m << 4));
      const float dl = d * float(sc), ml = dmin * float(m);
      for (int k = 0; k < 16; ++k) {
        const int e = 16 * i + k;
        const int q = dl > 0 ? std::clamp(int(std::lround((xb[e] + ml) / dl)), 0, 3) : 0;
        y[b].qs[32 * (e / 128) + e % 32] |= uint8_t(q << (2 * ((e % 128) / 32)));
      }
    }
  }
}

}  // namespace tzero
