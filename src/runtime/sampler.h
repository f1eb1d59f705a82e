// Choosing the next token from the logits ("sampler-v2"; the chain is specified in
// include/tzero/sampling.h, SamplingParams).
//   temperature 0: argmax, ties to the lowest token id (DETERMINISM.md).
//   temperature > 0: p[i] = exp_ref((l[i] - max) / T) over the kept ids; the kept total z is
//   sum_f32_ref over them in id order; u is drawn from a SplitMix64 stream seeded by
//   (seed, step) only, never by the batch; the token is the first kept id whose running sum
//   (in id order) exceeds u * z. With no filter and no penalty this is sampler-v1 exactly.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tzero/sampling.h"

namespace tzero {

int32_t argmax_lowest(const float* logits, int n);

class Sampler {
 public:
  Sampler(float temperature, uint64_t seed) {
    params_.temperature = temperature;
    params_.seed = seed;
  }
  explicit Sampler(const tzero::SamplingParams& p) : params_(p) {}

  // context: the tokens before this step (prompt then output); n_prompt of them are prompt.
  int32_t sample(const float* logits, int n, int step, const std::vector<int32_t>& context = {},
                 size_t n_prompt = 0);
  float temperature() const { return params_.temperature; }

 private:
  tzero::SamplingParams params_;
  std::vector<float> work_, probs_;
  std::vector<int32_t> ids_;
};

// Log-softmax of raw logits in a fixed order: m = max, z = sum_f32_ref(exp_ref(l - m)),
// logprob(i) = (l[i] - m) - float(log(double(z))).
class Logprobs {
 public:
  Logprobs(const float* logits, int n);
  float of(int32_t token) const { return (logits_[token] - m_) - log_z_; }
  // The top_n tokens by logprob (ties: lower id first), best first.
  std::vector<std::pair<int32_t, float>> top(int top_n) const;

 private:
  const float* logits_;
  int n_;
  float m_, log_z_;
};

}  // namespace tzero
