// Scoring a prompt: the log probability of prompt token p + 1 under the logits row of position
// p (logprob-v1, the Logprobs of runtime/sampler.h, so a prompt token's logprob is the same
// number a generated token would report from that row), its rank, and the top alternatives.
// What `echo` + `logprobs` (OpenAI's legacy completions) and vLLM's `prompt_logprobs` report.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/vocab.h"
#include "tzero/sampling.h"

namespace tzero {

struct PromptScore {
  float logprob = 0;              // of the token
  int rank = 0;                   // 1 + the tokens whose logit is larger than the token's
  std::vector<TokenLogprob> top;  // the top_n tokens, best first (ties: lower id first)
};

// row: (n_vocab) the raw logits of the position before `token`; top_n in 0..20.
PromptScore score_prompt_token(const float* row, int n_vocab, int32_t token, int top_n,
                               const Vocab& vocab);

}  // namespace tzero
