// The audit's batched-engine configurations: the prompt runs through tzero::Engine beside
// other requests (batch mates: the audit's other prompts and fixed fillers, each with its own
// length), with chunked prefill, a warm prefix cache, or a KV pool so small that sequences are
// preempted and recomputed. Only the request under audit is compared.
#include <algorithm>
#include <chrono>

#include "audit/audit.h"
#include "tzero/engine.h"

namespace tzero {

namespace {
const char* kFillers[] = {
    "The quick brown fox jumps over the lazy dog.",
    "In the beginning",
    "A long time ago, in a small village by the sea, there lived an old fisherman who",
    "1 2 3 4 5 6 7 8 9 10",
    "Tell me a story about",
    "Lily and Ben went to the park. They saw a big",
    "Once",
};
}  // namespace

void run_batch_config(const std::string& model_path, const AuditConfig& cfg,
                      const AuditOptions& opt, size_t p, AuditOutcome& out) {
  const std::vector<std::string>& prompts = opt.prompts;
  const int n_predict = opt.n_predict;
  tzero::EngineOptions eo;
  eo.model_path = model_path;
  eo.op_overrides = opt.op_overrides;
  eo.kv_type = opt.kv_type;
  eo.use_mmap = opt.use_mmap;
  eo.n_threads = cfg.threads;
  eo.kernels = cfg.kernels;
  eo.mode = cfg.mode;
  eo.block_size = cfg.block_size;
  eo.prefill_chunk = cfg.prefill_chunk;
  eo.max_seqs = cfg.mates + 1;
  if (!cfg.spec.empty()) {
    eo.spec_type = cfg.spec == "self" ? "draft" : cfg.spec;
    if (cfg.spec == "self") eo.draft_model = model_path;
    eo.draft_max = cfg.draft_max;
  }
  std::vector<std::string> mates;
  for (size_t i = 0; i < prompts.size() && int(mates.size()) < cfg.mates; ++i)
    if (i != p) mates.push_back(prompts[i]);
  for (size_t i = 0; int(mates.size()) < cfg.mates; ++i) mates.push_back(kFillers[i % 7]);

  auto request = [&](const std::string& text) {
    tzero::RequestParams r;
    r.prompt = text;
    r.max_tokens = n_predict;
    return r;
  };
  int longest = 0;
  {
    tzero::EngineOptions small = eo;
    small.max_seqs = 1;
    small.n_ctx = 16;
    small.max_batch_tokens = 16;
    const tzero::Engine e(small);
    for (const std::string& t : mates)
      longest = std::max(longest, int(e.tokenize_prompt(t, false).size()));
    longest = std::max(longest, int(e.tokenize_prompt(prompts[p], false).size()));
  }
  eo.n_ctx = longest + n_predict + 1;
  // kv_tokens < 0: a pool that fits the longest request alone and little more, so the others
  // get preempted.
  eo.kv_tokens = cfg.kv_tokens < 0 ? eo.n_ctx + 2 * cfg.block_size : cfg.kv_tokens;
  tzero::Engine engine(eo);
  if (cfg.warm_cache) {
    engine.submit(request(prompts[p]), nullptr);
    engine.run_until_idle();
  }
  // The mates first, the audited request in the middle of the queue, so it shares every step;
  // in the tiny pool it comes last, the youngest, which the scheduler preempts first.
  const size_t half = cfg.kv_tokens < 0 ? mates.size() : mates.size() / 2;
  for (size_t i = 0; i < half; ++i) engine.submit(request(mates[i]), nullptr);
  out.tokens.clear();
  using Clock = std::chrono::steady_clock;
  Clock::time_point first, last;
  engine.submit(request(prompts[p]), [&](const tzero::TokenEvent& e) {
    if (!e.finished) {
      last = Clock::now();
      if (out.tokens.empty()) first = last;
      out.tokens.push_back(e.token);
      return;
    }
    out.stop = e.stop_reason;
    out.logits_digest = e.logits_digest;
    out.cached_tokens = e.n_cached;
    out.preempted = e.n_preempted;
  });
  for (size_t i = half; i < mates.size(); ++i) engine.submit(request(mates[i]), nullptr);
  engine.run_until_idle();
  const double decode_s = std::chrono::duration<double>(last - first).count();
  out.pp_tokens_per_s = 0;
  out.na.prefill =
      "batched run: the request's prompt is prefilled in the same forward passes as its mates' "
      "work, so it has no prefill time of its own";
  out.tg_tokens_per_s =
      out.tokens.size() > 1 && decode_s > 0 ? (out.tokens.size() - 1) / decode_s : 0;
  out.na.decode = out.tg_tokens_per_s > 0 ? "" : "no decode step after the first token to time";
}

}  // namespace tzero
