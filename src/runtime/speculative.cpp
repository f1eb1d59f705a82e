#include "runtime/speculative.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/sampler.h"

namespace tzero {

void check_same_vocab(const Vocab& target, const Vocab& draft) {
  const std::string why = "the draft model's vocabulary is not the target's: ";
  check(target.n_tokens() == draft.n_tokens(), why + std::to_string(draft.n_tokens()) +
                                                   " tokens against " +
                                                   std::to_string(target.n_tokens()));
  for (int id = 0; id < target.n_tokens(); ++id)
    check(target.text(id) == draft.text(id), why + "token " + std::to_string(id) + " is '" +
                                                 std::string(draft.text(id)) + "' against '" +
                                                 std::string(target.text(id)) + "'");
  check(target.bos() == draft.bos(), why + "another BOS token");
  check(target.eos() == draft.eos(), why + "another EOS token");
  check(target.eot() == draft.eot(), why + "another EOT token");
}

NgramDrafter::NgramDrafter(int ngram_min, int ngram_max) : min_(ngram_min), max_(ngram_max) {
  check(ngram_min >= 1 && ngram_min <= ngram_max, "n-gram lookup: 1 <= min <= max");
}

std::vector<int32_t> NgramDrafter::propose(const std::vector<int32_t>& context, int max) {
  const int n_ctx = int(context.size());
  for (int n = std::min(max_, n_ctx - 1); n >= min_; --n) {
    const int32_t* tail = context.data() + (n_ctx - n);
    // The latest earlier start s with context[s .. s + n) == tail (s + n < n_ctx: something
    // follows it).
    for (int s = n_ctx - n - 1; s >= 0; --s) {
      if (!std::equal(tail, tail + n, context.data() + s)) continue;
      const int from = s + n, count = std::min(max, n_ctx - from);
      return std::vector<int32_t>(context.begin() + from, context.begin() + from + count);
    }
  }
  return {};
}

ModelDrafter::ModelDrafter(Session& draft, int target_n_vocab)
    : session_(draft),
      n_vocab_(std::min(target_n_vocab, draft.hparams().n_vocab)),
      fwd_(draft.make_forward()),
      kv_(draft.hparams(), draft.n_ctx(), draft.options().kv_type, draft.local_layers()),
      logits_(size_t(draft.hparams().n_vocab)) {}

std::vector<int32_t> ModelDrafter::propose(const std::vector<int32_t>& context, int max) {
  // Positions the draft's context allows: it drafts nothing rather than fail.
  max = std::min(max, session_.n_ctx() - int(context.size()));
  if (max <= 0 || context.empty()) return {};
  // Keep what the cache holds of the context; feed the rest (at least the last token, whose
  // logits the first draft comes from).
  size_t keep = 0;
  while (keep < fed_.size() && keep < context.size() && fed_[keep] == context[keep]) ++keep;
  keep = std::min(keep, context.size() - 1);
  fed_.assign(context.begin(), context.begin() + std::ptrdiff_t(keep));
  for (size_t p = keep; p < context.size(); p += size_t(fwd_->n_batch())) {
    const int n = int(std::min(context.size() - p, size_t(fwd_->n_batch())));
    const bool last = p + size_t(n) == context.size();
    fwd_->eval(&context[p], n, int(p), kv_, last ? logits_.data() : nullptr);
    fed_.insert(fed_.end(), context.begin() + std::ptrdiff_t(p),
                context.begin() + std::ptrdiff_t(p) + n);
  }
  std::vector<int32_t> drafts;
  for (;;) {
    const int32_t t = argmax_lowest(logits_.data(), n_vocab_);
    drafts.push_back(t);
    if (int(drafts.size()) == max) break;
    fwd_->eval(&t, 1, int(fed_.size()), kv_, logits_.data());
    fed_.push_back(t);
  }
  return drafts;
}

std::shared_ptr<Session> open_draft_model(const std::string& path, const Session& target) {
  ComputeOptions c = target.options();
  c.gpu_layers = 0;
  c.whole_here = true;
  c.n_ctx = target.n_ctx();
  try {
    return Session::open(path, c);
  } catch (const Error& e) {
    throw Error(std::string("--draft-model: ") + e.what());
  }
}

std::unique_ptr<Drafter> make_drafter(const Session& target, const SpeculativeOptions& o) {
  if (o.source == DraftSource::none) return nullptr;
  check(o.draft_max >= 1 && o.draft_max <= 256, "--draft-max: between 1 and 256");
  check(o.draft_min >= 0 && o.draft_min <= o.draft_max, "--draft-min: between 0 and --draft-max");
  check(!target.hparams().recurrent(),
        "speculative decoding: " + target.hparams().arch_name +
            " has recurrent layers, whose state a rejected draft would advance; not supported");
  if (o.source == DraftSource::ngram)
    return std::make_unique<NgramDrafter>(o.ngram_min, o.ngram_max);
  check(o.draft != nullptr, "internal: a draft model source without its session");
  check_same_vocab(target.vocab(), o.draft->vocab());
  check(!o.draft->hparams().recurrent(),
        "--draft-model: " + o.draft->hparams().arch_name +
            " has recurrent layers, whose state a rejected draft would advance; not supported");
  return std::make_unique<ModelDrafter>(*o.draft, target.hparams().n_vocab);
}

}  // namespace tzero
