// The audit's report.json: the matrix, every outcome, the flip risk, fast mode's summary and the
// throughput of every configuration. A value that was not measured is null and the outcome's
// "not_measured" object says why, keyed by the field's name.
#include "audit/audit.h"

namespace tzero {

namespace {
using nlohmann::json;

json measured(double v, const std::string& why_not) {
  return why_not.empty() ? json(v) : json(nullptr);
}

json rate_json(const RateStats& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}};
}
}  // namespace

json audit_json(const AuditReport& r) {
  json j;
  j["model"] = r.model;
  j["prompts"] = r.prompts;
  j["deterministic_failures"] = r.deterministic_failures;
  j["fast"] = {{"runs", r.fast_runs},
               {"diverged", r.fast_runs_diverged},
               {"max_logit_deviation", r.fast_max_logit_deviation},
               {"max_logit_deviation_runs", r.fast_deviation_runs},
               {"distinct_results", r.fast_distinct_results}};
  for (size_t p = 0; p < r.prompts.size(); ++p)
    j["flip_risk"].push_back(
        {{"prompt", p}, {"min_top2_gap", r.min_gap[p]}, {"step", r.min_gap_step[p]}});
  for (const auto& c : r.configs)
    j["configs"].push_back({{"name", c.name},
                            {"group", c.group},
                            {"deterministic", c.deterministic},
                            {"threads", c.threads},
                            {"kernels", c.kernels},
                            {"batch", c.batch},
                            {"mode", to_string(c.mode)},
                            {"mates", c.mates},
                            {"prefill_chunk", c.prefill_chunk},
                            {"kv_tokens", c.kv_tokens},
                            {"warm_cache", c.warm_cache}});
  for (const auto& o : r.outcomes) {
    json e = {{"config", o.config},
              {"prompt", o.prompt},
              {"identical", o.identical},
              {"tokens_equal", o.tokens_equal},
              {"tokens", o.tokens},
              {"stop_reason", to_string(o.stop)},
              {"max_logit_deviation", measured(o.max_logit_deviation, o.na.deviation)},
              {"pp_tokens_per_s", measured(o.pp_tokens_per_s, o.na.prefill)},
              {"tg_tokens_per_s", measured(o.tg_tokens_per_s, o.na.decode)}};
    json na = json::object();
    if (!o.na.deviation.empty()) na["max_logit_deviation"] = o.na.deviation;
    if (!o.na.prefill.empty()) na["pp_tokens_per_s"] = o.na.prefill;
    if (!o.na.decode.empty()) na["tg_tokens_per_s"] = o.na.decode;
    if (!na.empty()) e["not_measured"] = na;
    if (o.cached_tokens > 0) e["cached_tokens"] = o.cached_tokens;
    if (o.preempted > 0) e["preempted"] = o.preempted;
    if (o.has_first)
      e["first"] = {{"pos", o.first_pos}, {"layer", o.first_layer}, {"op", o.first_op}};
    j["outcomes"].push_back(e);
  }
  json timing = json::array();
  for (const auto& t : r.timing) {
    json e = {{"config", t.config},
              {"runs", t.runs},
              {"prompt", 0},
              {"decode_tokens_per_s", rate_json(t.decode)},
              {"prefill_tokens_per_s", t.prefill_na.empty() ? rate_json(t.prefill) : json(nullptr)},
              {"decode_seconds_median", t.decode_seconds},
              {"below_noise_floor", t.below_noise_floor}};
    if (!t.prefill_na.empty()) e["not_measured"] = {{"prefill_tokens_per_s", t.prefill_na}};
    timing.push_back(e);
  }
  j["throughput"] = {{"noise_floor_s", kTimingNoiseFloorS}, {"configs", timing}};
  return j;
}

}  // namespace tzero
