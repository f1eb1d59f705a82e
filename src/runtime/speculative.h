// Speculative decoding whose output is plain decoding's, bit for bit (issue #34, docs/
// DETERMINISM.md). A drafter proposes the next few tokens; one forward pass of the target feeds
// the last sampled token and the drafts, and returns a logits row after each. DecodeStep then
// samples from those rows in order, exactly as plain decoding would from the rows of its
// one-token passes, and the loop (runtime/decode_loop.h, the engine) stops the pass at the first
// sampled token that differs from its draft:
//   - a row's bits do not depend on how many tokens share its pass (the forward pass's contract,
//     model/forward.h), so every row sampled from is the row plain decoding samples from;
//   - sampling, the digest, logprobs, grammars and stop rules see the same rows in the same
//     order, with the same step indices (seeded draws included);
//   - a rejected draft's keys and values lie past the last accepted position: no later row reads
//     them before the token sampled there overwrites them (attention reads positions 0..pos).
// So drafts change the speed only (in the deterministic and portable modes: --mode fast has no
// contract to keep). Models with recurrent layers (whose state a rejected draft would advance)
// are refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "runtime/session.h"
#include "tokenizer/vocab.h"

namespace tzero {

enum class DraftSource : uint8_t {
  none,   // plain decoding
  model,  // a draft model (SpeculativeOptions::draft)
  ngram,  // prompt lookup: the tokens that followed the latest earlier match of the context's tail
};

struct SpeculativeOptions {
  DraftSource source = DraftSource::none;
  std::shared_ptr<Session> draft;  // DraftSource::model: the draft model's session
  int draft_max = 16;              // most tokens drafted for one pass (llama.cpp's --draft-max)
  int draft_min = 0;               // fewer drafted tokens are not verified (--draft-min)
  int ngram_max = 4,
      ngram_min = 1;  // DraftSource::ngram: the tail lengths looked up, longest first
};

// What speculation did for one request.
struct SpeculativeCounts {
  int drafted = 0;   // draft tokens fed for verification
  int accepted = 0;  // of them, equal to the token sampled at their place
  int passes = 0;    // target forward passes after the prompt
};

// Throws tzero::Error naming what differs when the draft model's vocabulary is not the target's
// (token count, a token's text, BOS, EOS or EOT).
void check_same_vocab(const Vocab& target, const Vocab& draft);

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to max tokens to follow `context` (the prompt and every sampled token so far).
  virtual std::vector<int32_t> propose(const std::vector<int32_t>& context, int max) = 0;
};

// The tokens that followed the latest earlier occurrence of the context's last n tokens, for n
// from ngram_max down to ngram_min (the first n with a match), at most max of them.
class NgramDrafter : public Drafter {
 public:
  NgramDrafter(int ngram_min, int ngram_max);
  std::vector<int32_t> propose(const std::vector<int32_t>& context, int max) override;

 private:
  int min_, max_;
};

// A draft model run greedily (the lowest id among equal logits) on its own KV cache. It feeds
// what it has not seen of the context (after its last proposal's first rejected token), then
// drafts one token at a time.
class ModelDrafter : public Drafter {
 public:
  // target_n_vocab: the target's logits rows; drafts are the best among ids below it and the
  // draft's own (a padded embedding may have more rows than the other model's).
  ModelDrafter(Session& draft, int target_n_vocab);
  std::vector<int32_t> propose(const std::vector<int32_t>& context, int max) override;

 private:
  Session& session_;
  int n_vocab_;  // ids a draft may be: below both models' n_vocab
  std::unique_ptr<Forward> fwd_;
  KvCache kv_;
  std::vector<int32_t> fed_;   // the tokens at positions 0.. of kv_
  std::vector<float> logits_;  // (n_vocab)
};

// The drafter of `options` (nullptr for DraftSource::none). Throws tzero::Error when the target
// cannot be drafted for: recurrent layers, a draft model with another vocabulary, draft_min or
// draft_max out of range.
std::unique_ptr<Drafter> make_drafter(const Session& target, const SpeculativeOptions& options);

// A draft model (--draft-model) opened beside `target`: on the CPU with the target's context (it
// drafts as far as the target goes) and, under mpirun, whole on rank 0 (the target's layers are
// over the ranks). Errors name --draft-model.
std::shared_ptr<Session> open_draft_model(const std::string& path, const Session& target);

}  // namespace tzero
