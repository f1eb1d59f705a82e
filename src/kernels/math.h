// tzero's own transcendental functions. Every kernel variant (scalar, SIMD, GPU) must mirror
// these operation for operation, so the results never depend on a libm or an ISA.
#pragma once

namespace tzero {

// e^x in float (version "exp-v1"), from basic IEEE operations and explicit FMAs only:
//   x > 88.72283 -> +inf; x < -87.33654 -> 0 (no subnormal results); NaN -> NaN.
//   n = nearbyint(x * log2(e)); r = fma(n, -ln2_hi, x); r = fma(n, -ln2_lo, r);
//   p = Horner of the degree-7 Taylor polynomial of e^r with fma, from 1/5040 down to 1;
//   result = p * 2^n (2^n built from its exponent bits). Max error about 1 ulp.
float exp_ref(float x);

// silu(x) = x / (1 + e^-x) with exp_ref (version "silu-v1").
inline float silu_ref(float x) {
  return x / (1.0f + exp_ref(-x));
}

// GELU with the tanh approximation (version "gelu-v1"), written as
// 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
//   x3 = (x * x) * x;  w = x + 0.044715f * x3;  t = 1.5957691f * w   (= 2u; no FMA)
//   result = x / (1 + exp_ref(-t))
inline float gelu_ref(float x) {
  const float x3 = (x * x) * x;
  const float w = x + 0.044715f * x3;
  const float t = 1.59576912160573071f * w;
  return x / (1.0f + exp_ref(-t));
}

// cap * tanh(x / cap) (version "softcap-v1": Gemma 2's logit soft-capping), tanh from exp_ref:
//   y = x / cap;  e = exp_ref(-2|y|) (as -(|y| + |y|));  t = (1 - e) / (1 + e)
//   result = cap * t with the sign of y
// Relative error about 1e-7 / |y| near 0 (the subtraction), a few ulps elsewhere.
inline float softcap_ref(float x, float cap) {
  const float y = x / cap;
  const float a = y < 0 ? -y : y;
  const float e = exp_ref(-(a + a));
  const float t = (1.0f - e) / (1.0f + e);
  return cap * (y < 0 ? -t : t);
}

// ln x in float (version "log-v1"), from basic IEEE operations only: x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)); s = (m - 1) / (m + 1); ln m = 2 (s + s^3/3 + ... + s^11/11) by Horner
// in s^2 (no FMA); result = e * ln2_hi + (e * ln2_lo + ln m). x == 0 -> -inf, x < 0 or NaN ->
// NaN, +inf -> +inf; subnormal x are scaled by 2^24 first. Max error about 1 ulp.
float log_ref(float x);

// softplus(x) = ln(1 + e^x) (version "softplus-v1", ggml's threshold): x > 20 -> x, else
// log_ref(1 + exp_ref(x)) (1 + e^x rounded first, as ggml computes it).
inline float softplus_ref(float x) {
  return x > 20.0f ? x : log_ref(1.0f + exp_ref(x));
}

}  // namespace tzero
