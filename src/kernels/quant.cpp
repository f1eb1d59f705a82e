#include "kernels/quant.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "kernels/quant_k.h"
#include "kernels/quant_legacy.h"
#include "kernels/quant_k2.h"

namespace tzero {

void dequantize_row(TensorType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case TensorType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_float(s[i]);
      return;
    }
    case TensorType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    case TensorType::Q8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (size_t k = 0; k < n / kQBlock; ++k) {
        const float d = fp16_to_float(b[k].d);
        for (int i = 0; i < kQBlock; ++i) dst[k * kQBlock + i] = d * float(b[k].qs[i]);
      }
      return;
    }
    case TensorType::Q4_0: {
      const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
      for (size_t k = 0; k < n / kQBlock; ++k) {
        const float d = fp16_to_float(b[k].d);
        for (int i = 0; i < 16; ++i) {
          dst[k * kQBlock + i] = d * float((b[k].qs[i] & 15) - 8);
          dst[k * kQBlock + i + 16] = d * float((b[k].qs[i] >> 4) - 8);
        }
      }
      return;
    }
    case TensorType::Q4_1:
      dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, n);
      return;
    case TensorType::Q5_0:
      dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, n);
      return;
    case TensorType::Q5_1:
      dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, n);
      return;
    case TensorType::IQ4_NL:
      dequantize_row_iq4_nl(static_cast<const BlockIQ4_NL*>(src), dst, n);
      return;
    case TensorType::MXFP4:
      dequantize_row_mxfp4(static_cast<const BlockMXFP4*>(src), dst, n);
      return;
    case TensorType::Q4_K:
      dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
      return;
    case TensorType::Q5_K:
      dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n);
      return;
    case TensorType::Q6_K:
      dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
      return;
    case TensorType::IQ4_XS:
      dequantize_row_iq4_xs(static_cast<const BlockIQ4_XS*>(src), dst, n);
      return;
    case TensorType::Q3_K:
      dequantize_row_q3_k(static_cast<const BlockQ3_K*>(src), dst, n);
      return;
    case TensorType::Q2_K:
      dequantize_row_q2_k(static_cast<const BlockQ2_K*>(src), dst, n);
      return;
    default:
      throw Error(std::string("dequantize: unsupported tensor type ") + traits(t).name);
  }
}

void quantize_row(TensorType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case TensorType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = float_to_fp16(src[i]);
      return;
    }
    case TensorType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i]);
      return;
    }
    case TensorType::Q8_0: {
      BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
      for (size_t k = 0; k < n / kQBlock; ++k) {
        const float* x = src + k * kQBlock;
        float amax = 0;
        for (int i = 0; i < kQBlock; ++i) amax = std::fmax(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[k].d = float_to_fp16(d);
        for (int i = 0; i < kQBlock; ++i) b[k].qs[i] = int8_t(std::round(x[i] * id));
      }
      return;
    }
    case TensorType::Q4_0: {
      BlockQ4_0* b = static_cast<BlockQ4_0*>(dst);
      for (size_t k = 0; k < n / kQBlock; ++k) {
        const float* x = src + k * kQBlock;
        float amax = 0, m = 0;
        for (int i = 0; i < kQBlock; ++i)
          if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            m = x[i];
          }
        const float d = m / -8.0f;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        b[k].d = float_to_fp16(d);
        for (int i = 0; i < 16; ++i) {
          const int q0 = std::min(15, int(x[i] * id + 8.5f));
          const int q1 = std::min(15, int(x[i + 16] * id + 8.5f));
          b[k].qs[i] = uint8_t(q0 | (q1 << 4));
        }
      }
      return;
    }
    case TensorType::Q4_1:
      quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), n);
      return;
    case TensorType::Q5_0:
      quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), n);
      return;
    case TensorType::Q5_1:
      quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), n);
      return;
    case TensorType::IQ4_NL:
      quantize_row_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n);
      return;
    case TensorType::MXFP4:
      quantize_row_mxfp4(src, static_cast<BlockMXFP4*>(dst), n);
      return;
    case TensorType::Q4_K:
      quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), n);
      return;
    case TensorType::Q5_K:
      quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), n);
      return;
    case TensorType::Q6_K:
      quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), n);
      return;
    case TensorType::IQ4_XS:
      quantize_row_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n);
      return;
    case TensorType::Q3_K:
      quantize_row_q3_k(src, static_cast<BlockQ3_K*>(dst), n);
      return;
    case TensorType::Q2_K:
      quantize_row_q2_k(src, static_cast<BlockQ2_K*>(dst), n);
      return;
    default:
      throw Error(std::string("quantize: unsupported tensor type ") + traits(t).name);
  }
}

bool takes_act_q8(TensorType t) {
  switch (t) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
      return true;
    default:
      return false;
  }
}

void quantize_act_q8(const float* x, ActQ8* dst, size_t n) {
  for (size_t k = 0; k < n / kQBlock; ++k) {
    const float* xb = x + k * kQBlock;
    float amax = 0;
    for (int i = 0; i < kQBlock; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[k].d = d;
    for (int i = 0; i < kQBlock; ++i) dst[k].qs[i] = int8_t(std::nearbyint(xb[i] * id));
  }
}

}  // namespace tzero
