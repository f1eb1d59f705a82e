// The audit's throughput: every configuration timed on the first prompt, untraced (a trace costs
// more than a tiny model's forward pass), repeated so that the report can show the spread
// instead of one run's timer noise. At least AuditOptions::timing_runs runs; more until
// kTimingBudgetS of wall time is spent on the configuration; at most kTimingMaxRuns. A
// configuration whose median decode takes less than kTimingNoiseFloorS is marked (the page then
// draws no bars).
#include <algorithm>
#include <chrono>

#include "audit/audit.h"

namespace tzero {

namespace {
RateStats stats(std::vector<double> v) {
  RateStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}
}  // namespace

std::vector<AuditTiming> time_configs(const Model& model, const Vocab& vocab,
                                      const std::string& model_path,
                                      const std::vector<AuditConfig>& configs,
                                      const AuditOptions& opt) {
  using Clock = std::chrono::steady_clock;
  std::vector<AuditTiming> out;
  for (const AuditConfig& cfg : configs) {
    AuditTiming t;
    t.config = cfg.name;
    const bool batched = cfg.group == "batch" || cfg.mates > 0;
    std::vector<double> prefill, decode, decode_s;
    const auto t0 = Clock::now();
    while (t.runs < kTimingMaxRuns &&
           (t.runs < opt.timing_runs ||
            std::chrono::duration<double>(Clock::now() - t0).count() < kTimingBudgetS)) {
      ++t.runs;
      if (batched) {
        AuditOutcome o;
        run_batch_config(model_path, cfg, opt, 0, o);
        if (o.tg_tokens_per_s > 0) {
          decode.push_back(o.tg_tokens_per_s);
          decode_s.push_back(double(o.tokens.size() - 1) / o.tg_tokens_per_s);
        }
        t.prefill_na = o.na.prefill;
        continue;
      }
      GenerateOptions g;
      g.prompt = opt.prompts[0];
      g.n_predict = opt.n_predict;
      g.compute = compute_options_of(cfg, opt);
      g.speculative = speculative_of(cfg, opt, model, vocab);
      const GenerateResult r = generate(model, vocab, g);
      if (r.prompt_seconds > 0)
        prefill.push_back(double(r.prompt_tokens.size()) / r.prompt_seconds);
      if (r.gen_seconds > 0 && r.n_eval_rows > 1) {
        decode.push_back((r.n_eval_rows - 1) / r.gen_seconds);
        decode_s.push_back(r.gen_seconds);
      }
    }
    t.prefill = stats(prefill);
    t.decode = stats(decode);
    t.decode_seconds = stats(decode_s).median;
    if (prefill.empty() && t.prefill_na.empty()) t.prefill_na = "no prefill time was measured";
    t.below_noise_floor = t.decode_seconds < kTimingNoiseFloorS;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tzero
