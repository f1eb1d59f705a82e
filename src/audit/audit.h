// The local audit: each prompt under a matrix of configurations (thread counts, kernel
// variants, prefill chunk sizes, token-by-token decode of the prompt, fast mode), each compared
// with a baseline run by tracing both and diffing the traces. The batched engine's dimensions
// (batch mates, chunked prefill beside them, prefix cache warm, preemption in a tiny KV pool,
// fast mode in a batch) compare the request's tokens and logits digest with the baseline's. The
// report is the product's proof on the user's own machine: identical, or the first (position,
// layer, op) that drifted.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/weights.h"
#include "runtime/generate.h"
#include "tokenizer/vocab.h"
#include "tzero/types.h"

namespace tzero {

struct AuditConfig {
  std::string name;           // "threads=4", "kernels=scalar", "chunk=1", "fast#2", ...
  std::string group;          // "threads", "kernels", "chunk", "fast"
  bool deterministic = true;  // false: fast mode, expected to drift
  int threads = 1;
  std::string kernels = "auto";
  int batch = 64;
  Mode mode = Mode::deterministic;
  // Batched-engine configurations (group "batch"): the prompt runs through tzero::Engine.
  int mates = 0;          // other requests in flight beside it
  int prefill_chunk = 0;  // EngineOptions::prefill_chunk
  int kv_tokens = 0;      // EngineOptions::kv_tokens (small: preemption)
  int block_size = 16;
  bool warm_cache = false;  // run it once first, so its prompt comes from the prefix cache
  // Speculative decoding (group "draft", or a batch's): "ngram-simple" (prompt lookup) or
  // "self" (the model as its own draft); "" none. Drafts must not change a bit.
  std::string spec = "";
  int draft_max = 4;
};

struct AuditOutcome {
  std::string config;
  size_t prompt = 0;
  bool identical = true;
  bool has_first = false;  // first divergence (when not identical)
  uint32_t first_pos = 0;
  int first_layer = -1;
  std::string first_op;
  bool tokens_equal = true;
  double max_logit_deviation = 0;  // max |logit - baseline logit| over every step
  // Rates of this (traced) run; a batched run's decode rate is its own request's, from its
  // first generated token to its last, while it shares every step with its mates.
  double pp_tokens_per_s = 0, tg_tokens_per_s = 0;
  // Why a value above was not measured ("" when it was): the report shows n/a with the reason.
  struct NotMeasured {
    std::string deviation, prefill, decode;
  } na;
  std::string logits_digest;
  std::vector<int32_t> tokens;         // generated (the stop token included)
  StopReason stop = StopReason::none;  // why generation ended (the decode step's stop rules)
  // Batched configurations: prompt tokens from the prefix cache, times preempted.
  int cached_tokens = 0, preempted = 0;
};

// Throughput of one configuration, from repeated untraced runs of the first prompt
// (audit/audit_timing.cpp): the median and the range over the runs.
struct RateStats {
  double median = 0, min = 0, max = 0;  // tokens/s
};

struct AuditTiming {
  std::string config;
  int runs = 0;  // timed runs
  RateStats prefill, decode;
  std::string prefill_na;          // why prefill was not measured ("" when it was)
  double decode_seconds = 0;       // the median time one run spent decoding
  bool below_noise_floor = false;  // decode_seconds < kTimingNoiseFloorS: rates are noise
};

// A decode that takes less than this is timer and scheduler noise: one preemption changes the
// rate several times over. Such rates are listed, but when any configuration's are, the page
// draws no throughput bars at all.
constexpr double kTimingNoiseFloorS = 0.005;
// Timed runs per configuration: at least timing_runs, more until kTimingBudgetS of wall time
// is spent on the configuration, at most kTimingMaxRuns.
constexpr double kTimingBudgetS = 0.1;
constexpr int kTimingMaxRuns = 20;

struct AuditOptions {
  std::vector<std::string> prompts;
  int n_predict = 16;
  // Every configuration's (the audit varies threads, kernels, chunk and mode around them):
  // registered custom kernels ("matmul.f32=NAME") and the KV cache type.
  std::vector<std::string> op_overrides;
  std::string kv_type = "f32";
  bool use_mmap = true;  // false: the batched configurations read the file into memory too
  int timing_runs = 3;   // at least this many timed runs per configuration; 0: no timing
  int max_threads = 0;   // 0: the machine's cores
  std::string work_dir;  // where the trace files go (removed afterwards by the caller)
  std::string perturb;   // test hook: "LAYER:OP:POS" applied to the second configuration, so a
                         // test can prove the audit catches a broken kernel
};

struct AuditReport {
  std::string model;
  std::vector<std::string> prompts;
  std::vector<AuditConfig> configs;  // configs[0] is the baseline
  std::vector<AuditOutcome> outcomes;
  // Flip risk per prompt: the smallest top-2 logit gap of the baseline run and its step.
  std::vector<float> min_gap;
  std::vector<int> min_gap_step;
  double fast_max_logit_deviation = 0;
  int fast_runs_diverged = 0, fast_runs = 0;  // diverged from the deterministic baseline
  int fast_deviation_runs = 0;  // fast runs whose logit deviation was measured (traced ones)
  // Run-to-run nondeterminism of fast mode: the most distinct digests any prompt's fast runs gave.
  int fast_distinct_results = 0;
  int deterministic_failures = 0;
  std::vector<AuditTiming> timing;  // one per configuration, empty with timing_runs 0
  int timing_runs = 0;              // AuditOptions::timing_runs
};

std::vector<AuditConfig> audit_matrix(int max_threads);

// A sequential run of one configuration: its threads, kernels, chunk and mode, and what holds
// for every configuration (op overrides, KV type).
ComputeOptions compute_options_of(const AuditConfig& cfg, const AuditOptions& opt);
// The speculative decoding of a "draft" configuration (the model itself as the draft runs on a
// second session over the same weights).
SpeculativeOptions speculative_of(const AuditConfig& cfg, const AuditOptions& opt,
                                  const Model& model, const Vocab& vocab);

// Runs prompt p of the audit through the batched engine as cfg says (audit/audit_batch.cpp):
// fills tokens, stop, logits digest, cached_tokens and preempted of the outcome.
// Also times the audited request: tg_tokens_per_s over its generated tokens after the first
// (na.decode says why when it generated fewer than two), na.prefill (a batch has no prefill
// time of its own request).
void run_batch_config(const std::string& model_path, const AuditConfig& cfg,
                      const AuditOptions& opt, size_t p, AuditOutcome& out);

// Times every configuration (see AuditTiming) on prompts[0].
std::vector<AuditTiming> time_configs(const Model& model, const Vocab& vocab,
                                      const std::string& model_path,
                                      const std::vector<AuditConfig>& configs,
                                      const AuditOptions& opt);

// progress(done, total, line) is called after every run.
AuditReport run_audit(const Model& model, const Vocab& vocab, const std::string& model_path,
                      const AuditOptions& opt,
                      const std::function<void(size_t, size_t, const std::string&)>& progress);

// report.json (audit/audit_json.cpp): a value that was not measured is null, with its reason in
// the outcome's "not_measured" object.
nlohmann::json audit_json(const AuditReport& r);
std::string audit_html(const AuditReport& r);  // a self-contained page with SVG charts

}  // namespace tzero
