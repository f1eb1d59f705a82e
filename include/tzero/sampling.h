// Per-request sampling parameters and what logprobs report: the public side of the sampler
// (src/runtime/sampler.h implements the chain, "sampler-v2" in docs/DETERMINISM.md).
#pragma once

#include <cstdint>
#include <string>

namespace tzero {

// Per-request sampling. Every random draw comes from the request's own generator, seeded by
// (seed, step), so a seeded request is batch-invariant too. The chain, in order:
//   1. penalties on a copy of the logits: repetition (divide a positive logit, multiply a
//      negative one) over the last penalty_last_n tokens of prompt and output; frequency
//      (count x value) and presence (value once) over the output tokens;
//   2. temperature 0: the argmax, ties to the lowest token id (nothing else applies);
//   3. p[i] = exp((l[i] - max) / temperature); top_k keeps the k largest (ties: lower id first);
//      min_p keeps p[i] >= min_p (p of the top token is 1); top_p keeps the smallest prefix, by
//      decreasing p, whose sum reaches top_p of the kept total;
//   4. u in [0, 1) from the generator; the token is the first kept id, in id order, whose
//      running sum of p exceeds u times the kept total.
// Ranges are what Engine::submit accepts (RequestError otherwise); the server's OpenAI edge is
// stricter where OpenAI is (temperature in [0, 2], penalties in [-2, 2]).
struct SamplingParams {
  float temperature = 0.0f;  // finite, >= 0 (any such value is valid); 0 is greedy
  uint64_t seed = 0;
  int top_k = 0;                    // >= 0; 0: off
  float top_p = 1.0f;               // (0, 1]; 1: off
  float min_p = 0.0f;               // [0, 1]; 0: off
  float repetition_penalty = 1.0f;  // finite, > 0; 1: off
  int penalty_last_n = 64;          // < 0: the whole context
  float frequency_penalty = 0.0f;   // finite (OpenAI: [-2, 2])
  float presence_penalty = 0.0f;    // finite (OpenAI: [-2, 2])
  bool logprobs = false;            // report the chosen token's log probability
  int top_logprobs = 0;             // and this many alternatives (0..20)
};

// Log probabilities are those of the model's distribution (softmax of the raw logits, before
// penalties and temperature), computed in a fixed order ("logprob-v1").
struct TokenLogprob {
  int32_t token = 0;
  std::string text;  // the token's text piece
  float logprob = 0;
};

}  // namespace tzero
