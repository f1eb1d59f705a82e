#include "runtime/sampler.h"

#include <cmath>

#include "base/rng.h"
#include "kernels/dot.h"
#include "kernels/math.h"

namespace tz {

int32_t argmax_lowest(const float* logits, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;  // strict: ties keep the lowest id
  return best;
}

int32_t Sampler::sample(const float* logits, int n, int step) {
  if (temperature_ <= 0) return argmax_lowest(logits, n);
  const float max = logits[argmax_lowest(logits, n)];
  probs_.resize(size_t(n));
  for (int i = 0; i < n; ++i) probs_[i] = exp_ref((logits[i] - max) / temperature_);
  const float z = sum_f32_ref(probs_.data(), size_t(n));
  SplitMix64 rng(seed_ ^ (uint64_t(step) * 0xd1b54a32d192ed03ull));
  rng.next();
  const float target = rng.uniform() * z;
  float running = 0;
  for (int i = 0; i < n; ++i) {
    running += probs_[i];
    if (running > target) return i;
  }
  return argmax_lowest(logits, n);  // rounding left the target past the end: the mode
}

}  // namespace tz
