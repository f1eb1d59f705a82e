// Choosing the next token from the logits.
//   temperature 0: argmax, ties to the lowest token id (DETERMINISM.md).
//   temperature > 0: p[i] = exp_ref((l[i] - max) / T), z = sum_f32_ref(p); u is drawn from a
//   SplitMix64 stream seeded by (seed, step) only, never by the batch; the token is the first
//   id whose running sum (in id order) exceeds u * z.
#pragma once

#include <cstdint>
#include <vector>

namespace tz {

int32_t argmax_lowest(const float* logits, int n);

class Sampler {
 public:
  Sampler(float temperature, uint64_t seed) : temperature_(temperature), seed_(seed) {}
  int32_t sample(const float* logits, int n, int step);
  float temperature() const { return temperature_; }

 private:
  float temperature_;
  uint64_t seed_;
  std::vector<float> probs_;
};

}  // namespace tz
