// Prompt-token scores (runtime/prompt_score.h).
#include "runtime/prompt_score.h"

#include "runtime/sampler.h"

namespace tzero {

PromptScore score_prompt_token(const float* row, int n_vocab, int32_t token, int top_n,
                               const Vocab& vocab) {
  const Logprobs lp(row, n_vocab);
  PromptScore out;
  out.logprob = lp.of(token);
  int larger = 0;
  for (int i = 0; i < n_vocab; ++i) larger += row[i] > row[token] ? 1 : 0;
  out.rank = 1 + larger;
  for (const auto& [id, v] : lp.top(top_n))
    out.top.push_back({id, vocab.token_to_piece(id, true), v});
  return out;
}

}  // namespace tzero
