// The one request path: a RequestParams (include/tzero/engine.h) checked against a model and
// context, turned into what a decode step runs. The batched engine (Engine::submit), `tzero run`
// (runtime/generate.h) and the Python package start every request here, so a request is
// refused in the same words wherever it comes from (the server's own checks, which name
// OpenAI's fields, run before: server/openai_request.h).
//
//   StartedRequest s = start_request({session.vocab(), session.hparams(), session.n_ctx()}, r);
//   DecodeStep d(vocab, s.params.sampling, s.rules, s.params.prompt_tokens);
//   if (s.constraint) d.constrain(std::move(s.constraint));
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "grammar/token_mask.h"
#include "model/hparams.h"
#include "runtime/decode_step.h"
#include "tokenizer/vocab.h"
#include "tzero/request.h"

namespace tzero {

struct RequestContext {
  const Vocab& vocab;
  const HParams& hp;
  int n_ctx = 0;
  // What Pooling::model means for embedding requests (ModelInfo::pooling); none refuses them,
  // pooling_note says why.
  Pooling model_pooling = Pooling::mean;
  std::string pooling_note;
  // The vocabulary's token trie for grammars (built once by the caller); null: built here.
  std::function<std::shared_ptr<const TokenTrie>()> trie;
};

struct StartedRequest {
  RequestParams params;             // prompt_tokens filled (the text tokenized by the one BOS rule)
  Pooling pooling = Pooling::none;  // an embedding request's resolved pooling
  StopRules rules;
  std::unique_ptr<TokenConstraint> constraint;  // the grammar's, when there is one
};

// The stop rules of a request in a context of n_ctx positions.
StopRules stop_rules_of(const RequestParams& p, int n_ctx);
// The ranges of include/tzero/sampling.h; RequestError naming the field.
void validate_sampling(const SamplingParams& s);

// Checks and prepares a request: its prompt (tokenized when given as text; ids inside the
// vocabulary; within the context), max_tokens, the sampling ranges, scoring and embedding
// fields, stop tokens, and the grammar compiled into a constraint. Throws RequestError.
StartedRequest start_request(const RequestContext& ctx, const RequestParams& request);

}  // namespace tzero
