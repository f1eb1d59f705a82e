// The one request path (runtime/request.h).
#include "runtime/request.h"

#include <cmath>

#include "grammar/gbnf.h"
#include "runtime/prompt.h"

namespace tzero {

namespace {

[[noreturn]] void refuse(RequestErrorKind kind, const std::string& param, const std::string& m) {
  throw RequestError(kind, param, m);
}

}  // namespace

StopRules stop_rules_of(const RequestParams& p, int n_ctx) {
  StopRules r;
  r.max_tokens = p.max_tokens;
  r.n_ctx = n_ctx;
  r.stop = p.stop;
  r.stop_tokens = p.stop_tokens;
  r.ignore_eos = p.ignore_eos;
  return r;
}

void validate_sampling(const SamplingParams& s) {
  auto bad = [](const char* param, const std::string& m) {
    refuse(RequestErrorKind::invalid_value, param, m);
  };
  if (!(s.temperature >= 0.0f && std::isfinite(s.temperature)))
    bad("temperature", "temperature must be a finite number >= 0");
  if (s.top_k < 0) bad("top_k", "top_k must be >= 0");
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) bad("top_p", "top_p must be in (0, 1]");
  if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) bad("min_p", "min_p must be in [0, 1]");
  if (!(s.repetition_penalty > 0.0f && std::isfinite(s.repetition_penalty)))
    bad("repetition_penalty", "repetition_penalty must be > 0");
  if (!std::isfinite(s.frequency_penalty))
    bad("frequency_penalty", "frequency_penalty and presence_penalty must be finite");
  if (!std::isfinite(s.presence_penalty))
    bad("presence_penalty", "frequency_penalty and presence_penalty must be finite");
  if (s.top_logprobs < 0 || s.top_logprobs > 20)
    bad("top_logprobs", "top_logprobs must be in [0, 20]");
}

StartedRequest start_request(const RequestContext& ctx, const RequestParams& request) {
  StartedRequest out;
  RequestParams& r = out.params;
  r = request;
  const int n_vocab = ctx.hp.n_vocab;
  if (r.prompt_tokens.empty()) {
    r.prompt_tokens = tokenize_prompt(ctx.vocab, r.prompt, r.parse_special);
    if (r.prompt_tokens.empty())
      refuse(RequestErrorKind::empty_prompt, "prompt", "the prompt is empty");
  }
  for (int32_t t : r.prompt_tokens)
    if (t < 0 || t >= n_vocab)
      refuse(RequestErrorKind::invalid_token, "prompt",
             "prompt token " + std::to_string(t) + " is outside the vocabulary of " +
                 std::to_string(n_vocab));
  const int n_prompt = int(r.prompt_tokens.size());
  if (n_prompt > ctx.n_ctx)
    refuse(RequestErrorKind::context_length_exceeded, "prompt",
           "the prompt is " + std::to_string(n_prompt) + " tokens, longer than the context of " +
               std::to_string(ctx.n_ctx) + " tokens");
  // Embedding and scoring requests (prefill-only when nothing is generated).
  if (r.embedding != Pooling::none) {
    out.pooling = r.embedding == Pooling::model ? ctx.model_pooling : r.embedding;
    if (out.pooling == Pooling::none)
      refuse(RequestErrorKind::invalid_value, "pooling",
             "embeddings are not available for this model: " + ctx.pooling_note);
    if (r.embedding_dims < 0 || r.embedding_dims > ctx.hp.n_embd)
      refuse(RequestErrorKind::invalid_value, "dimensions",
             "dimensions must be in [1, " + std::to_string(ctx.hp.n_embd) +
                 "] (the model's embedding length), or 0 for all");
    if (r.prompt_logprobs)
      refuse(RequestErrorKind::invalid_value, "prompt_logprobs",
             "an embedding request cannot also score its prompt");
    r.max_tokens = 0;
  } else if (r.max_tokens < 0 || (r.max_tokens == 0 && !r.prompt_logprobs)) {
    refuse(RequestErrorKind::invalid_value, "max_tokens",
           "max_tokens must be >= 1 (0 only when scoring the prompt)");
  }
  if (r.prompt_top_logprobs < 0 || r.prompt_top_logprobs > 20)
    refuse(RequestErrorKind::invalid_value, "prompt_logprobs",
           "prompt_top_logprobs must be in [0, 20]");
  validate_sampling(r.sampling);
  for (const int32_t t : r.stop_tokens)
    if (t < 0 || t >= n_vocab)
      refuse(RequestErrorKind::invalid_token, "stop_tokens",
             "stop token " + std::to_string(t) + " is outside the vocabulary of " +
                 std::to_string(n_vocab));
  out.rules = stop_rules_of(r, ctx.n_ctx);
  if (r.n_resumed != 0 && !r.grammar.empty())  // (before compiling it)
    refuse(RequestErrorKind::invalid_value, "tzero_resume",
           "a request with a grammar cannot be resumed");
  if (!r.grammar.empty()) {
    std::shared_ptr<const Grammar> grammar;
    try {
      grammar = std::make_shared<const Grammar>(compile_gbnf(r.grammar));
    } catch (const GrammarError& e) {
      refuse(RequestErrorKind::invalid_grammar, "grammar", e.what());
    }
    std::vector<int32_t> ends = r.stop_tokens;
    if (!r.ignore_eos) {
      ends.push_back(ctx.vocab.eos());
      ends.insert(ends.end(), ctx.vocab.turn_ends().begin(), ctx.vocab.turn_ends().end());
    }
    try {
      out.constraint = std::make_unique<TokenConstraint>(
          std::move(grammar), ctx.trie ? ctx.trie() : std::make_shared<const TokenTrie>(ctx.vocab),
          std::move(ends));
    } catch (const GrammarBudgetExceeded& e) {
      refuse(RequestErrorKind::grammar_budget, "grammar", e.what());
    }
  }
  return out;
}

}  // namespace tzero
