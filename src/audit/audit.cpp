#include "audit/audit.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "kernels/kernel_set.h"
#include "trace/diff.h"

namespace tzero {

namespace {

// A generate() run's rates, digest, tokens and stop into its outcome.
void record_run(const GenerateResult& r, AuditOutcome& o) {
  o.pp_tokens_per_s = r.prompt_seconds > 0 ? r.prompt_tokens.size() / r.prompt_seconds : 0;
  o.tg_tokens_per_s =
      r.gen_seconds > 0 && r.n_eval_rows > 1 ? (r.n_eval_rows - 1) / r.gen_seconds : 0;
  if (o.tg_tokens_per_s == 0) o.na.decode = "no decode step after the first token to time";
  o.logits_digest = r.logits_digest;
  o.tokens = r.tokens;
  o.stop = r.stop_reason;
}

// The largest |logit - baseline logit| over the rows both runs kept.
double max_logit_deviation(const GenerateResult& r, const GenerateResult& base) {
  double m = 0;
  const size_t rows = std::min(r.logits.size(), base.logits.size());
  for (size_t s = 0; s < rows; ++s)
    for (size_t i = 0; i < r.logits[s].size(); ++i)
      m = std::max(m, double(std::fabs(r.logits[s][i] - base.logits[s][i])));
  return m;
}

// The first generated token that differs from the baseline's, as the outcome's divergence.
void name_first_token(const std::vector<int32_t>& tokens, const GenerateResult& base,
                      AuditOutcome& o) {
  size_t k = 0;
  while (k < tokens.size() && k < base.tokens.size() && tokens[k] == base.tokens[k]) ++k;
  o.has_first = true;
  o.first_pos = uint32_t(base.prompt_tokens.size() + k);
  o.first_op = "sampled token";
}

}  // namespace

ComputeOptions compute_options_of(const AuditConfig& cfg, const AuditOptions& opt) {
  ComputeOptions c;
  c.n_threads = cfg.threads;
  c.kernels = cfg.kernels;
  c.n_batch = cfg.batch;
  c.mode = cfg.mode;
  c.op_overrides = opt.op_overrides;
  c.kv_type = parse_kv_type(opt.kv_type);
  return c;
}

SpeculativeOptions speculative_of(const AuditConfig& cfg, const AuditOptions& opt,
                                  const Model& model, const Vocab& vocab) {
  SpeculativeOptions s;
  if (cfg.spec.empty()) return s;
  s.draft_max = cfg.draft_max;
  if (cfg.spec == "self") {
    s.source = DraftSource::model;
    s.draft = Session::over(model, vocab, compute_options_of(cfg, opt));
  } else {
    s.source = DraftSource::ngram;
  }
  return s;
}

std::vector<AuditConfig> audit_matrix(int max_threads) {
  const int cores =
      max_threads > 0 ? max_threads : std::max(1, int(std::thread::hardware_concurrency()));
  std::vector<AuditConfig> m;
  m.push_back({"baseline (1 thread)", "baseline", true, 1});
  for (int t = 2; t <= cores; ++t)
    m.push_back({"threads=" + std::to_string(t), "threads", true, t});
  const int over = 2 * cores + 1;  // more threads than cores
  m.push_back({"threads=" + std::to_string(over) + " (> cores)", "threads", true, over});
  for (const KernelSet* k : available_kernels())
    m.push_back({std::string("kernels=") + k->name, "kernels", true, cores, k->name});
  for (int b : {1, 3, 16}) {
    AuditConfig c{"chunk=" + std::to_string(b) + (b == 1 ? " (prompt decoded token by token)" : ""),
                  "chunk", true, cores};
    c.batch = b;
    m.push_back(c);
  }
  auto batch = [&](std::string name, int mates, int chunk, int kv, int block, bool warm) {
    AuditConfig c{std::move(name), "batch", true, cores};
    c.mates = mates, c.prefill_chunk = chunk, c.kv_tokens = kv, c.block_size = block;
    c.warm_cache = warm;
    return c;
  };
  m.push_back(batch("batch: alone in the engine", 0, 0, 0, 16, false));
  m.push_back(batch("batch: 3 mates", 3, 0, 0, 16, false));
  m.push_back(batch("batch: 7 mates, prefill chunk 5", 7, 5, 0, 4, false));
  m.push_back(batch("batch: prefix cache warm", 3, 0, 0, 4, true));
  m.push_back(batch("batch: 7 mates, tiny KV pool (preemption)", 7, 0, -1, 4, false));
  // Speculative decoding: the drafts' verification passes give the rows plain decoding gives.
  for (const auto& [spec, k] : {std::pair{"ngram-simple", 4}, std::pair{"self", 3}}) {
    AuditConfig c{std::string("draft: ") +
                      (spec == std::string("self") ? "the model itself" : "prompt lookup") +
                      ", up to " + std::to_string(k) + " tokens",
                  "draft", true, cores};
    c.spec = spec, c.draft_max = k;
    m.push_back(c);
  }
  {
    AuditConfig c = batch("batch: 3 mates, prompt lookup drafts", 3, 0, 0, 16, false);
    c.spec = "ngram-simple";
    m.push_back(c);
  }
  for (int run = 1; run <= 3; ++run) {
    AuditConfig c{"fast mode #" + std::to_string(run), "fast", false, std::max(cores, 2)};
    c.mode = Mode::fast;
    m.push_back(c);
  }
  for (int run = 1; run <= 2; ++run) {
    AuditConfig c = batch("fast mode, 3 mates #" + std::to_string(run), 3, 0, 0, 16, false);
    c.group = "fast";
    c.deterministic = false;
    c.threads = std::max(cores, 2);
    c.mode = Mode::fast;
    m.push_back(c);
  }
  return m;
}

AuditReport run_audit(const Model& model, const Vocab& vocab, const std::string& model_path,
                      const AuditOptions& opt,
                      const std::function<void(size_t, size_t, const std::string&)>& progress) {
  AuditReport rep;
  rep.model = model_path;
  rep.prompts = opt.prompts;
  rep.configs = audit_matrix(opt.max_threads);
  const size_t total = rep.configs.size() * opt.prompts.size();
  size_t done = 0;
  std::vector<TraceFile> base_traces(opt.prompts.size());
  std::vector<GenerateResult> base(opt.prompts.size());
  rep.min_gap.assign(opt.prompts.size(), INFINITY);
  rep.min_gap_step.assign(opt.prompts.size(), -1);

  // Counts a non-baseline outcome into the report's totals.
  auto account = [&](const AuditConfig& cfg, const AuditOutcome& o) {
    if (cfg.deterministic && !o.identical) ++rep.deterministic_failures;
    if (!cfg.deterministic) {
      ++rep.fast_runs;
      rep.fast_runs_diverged += !o.identical;
      if (o.na.deviation.empty()) {
        ++rep.fast_deviation_runs;
        rep.fast_max_logit_deviation =
            std::max(rep.fast_max_logit_deviation, o.max_logit_deviation);
      }
    }
  };
  // One traced generate() run, diffed against the baseline's trace (or becoming it).
  auto run_traced = [&](const AuditConfig& cfg, size_t c, size_t p, AuditOutcome& o) {
    GenerateOptions g;
    g.prompt = opt.prompts[p];
    g.n_predict = opt.n_predict;
    g.compute = compute_options_of(cfg, opt);
    g.keep_logits = true;
    g.trace_path = opt.work_dir + "/c" + std::to_string(c) + "_p" + std::to_string(p) + ".trace";
    g.trace_metadata = "{}";
    if (c == 1) g.perturb = opt.perturb;
    GenerateResult r = generate(model, vocab, g);
    record_run(r, o);
    TraceFile t = read_trace(g.trace_path);
    if (c == 0) {
      for (size_t s = 0; s < r.top2_gaps.size(); ++s)
        if (r.top2_gaps[s] < rep.min_gap[p]) {
          rep.min_gap[p] = r.top2_gaps[s];
          rep.min_gap_step[p] = int(s);
        }
      base_traces[p] = std::move(t);
      base[p] = std::move(r);
      return;
    }
    const TraceDiff d = diff_traces(base_traces[p], t);
    o.identical = d.identical() && r.logits_digest == base[p].logits_digest &&
                  r.stop_reason == base[p].stop_reason;
    o.has_first = d.has_first;
    o.first_pos = d.first_pos;
    o.first_layer = d.first_layer;
    o.first_op = d.first_op;
    o.tokens_equal = r.tokens == base[p].tokens;
    o.max_logit_deviation = max_logit_deviation(r, base[p]);
    account(cfg, o);
  };

  // A run with drafts (no trace: a trace follows one-token passes), compared by its digest,
  // tokens and logits rows.
  auto run_drafted = [&](const AuditConfig& cfg, size_t p, AuditOutcome& o) {
    GenerateOptions g;
    g.prompt = opt.prompts[p];
    g.n_predict = opt.n_predict;
    g.compute = compute_options_of(cfg, opt);
    g.keep_logits = true;
    g.speculative = speculative_of(cfg, opt, model, vocab);
    const GenerateResult r = generate(model, vocab, g);
    record_run(r, o);
    o.tokens_equal = r.tokens == base[p].tokens;
    o.identical = o.tokens_equal && r.logits_digest == base[p].logits_digest &&
                  r.stop_reason == base[p].stop_reason;
    o.max_logit_deviation = max_logit_deviation(r, base[p]);
    if (!o.tokens_equal) name_first_token(r.tokens, base[p], o);
    account(cfg, o);
  };

  for (size_t c = 0; c < rep.configs.size(); ++c) {
    const AuditConfig& cfg = rep.configs[c];
    for (size_t p = 0; p < opt.prompts.size(); ++p) {
      AuditOutcome o;
      o.config = cfg.name;
      o.prompt = p;
      if (cfg.group == "batch" || cfg.mates > 0) {
        run_batch_config(model_path, cfg, opt, p, o);
        const std::vector<int32_t>& tokens = o.tokens;
        o.tokens_equal = tokens == base[p].tokens;
        o.identical = o.tokens_equal && o.logits_digest == base[p].logits_digest &&
                      o.stop == base[p].stop_reason;
        // The engine gives a digest of the logits, not their values: equal digests are equal
        // bits (deviation 0); otherwise the size of the difference is unknown.
        if (o.logits_digest != base[p].logits_digest)
          o.na.deviation =
              "batched run: the engine reports a digest of the logits, not their values, so only "
              "that they differ is known";
        if (!o.tokens_equal) name_first_token(tokens, base[p], o);
        account(cfg, o);
      } else if (cfg.group == "draft") {
        run_drafted(cfg, p, o);
      } else {
        run_traced(cfg, c, p, o);
      }
      std::string line = cfg.name + ", prompt " + std::to_string(p + 1) + ": ";
      if (c == 0)
        line += "baseline";
      else if (o.identical)
        line += "identical";
      else if (!o.has_first)
        line += std::string(cfg.deterministic ? "DIVERGED" : "differs (fast mode, expected)") +
                ": same tokens, logits digest differs";
      else
        line += std::string(cfg.deterministic ? "DIVERGED" : "differs (fast mode, expected)") +
                " at position " + std::to_string(o.first_pos) + ", " +
                (o.first_layer < 0 ? std::string() : "blk." + std::to_string(o.first_layer) + ".") +
                o.first_op +
                (op_description(o.first_op).empty()
                     ? std::string()
                     : " (" + std::string(op_description(o.first_op)) + ")");
      if (o.cached_tokens > 0)
        line += " (" + std::to_string(o.cached_tokens) + " prompt tokens cached)";
      if (o.preempted > 0) line += " (preempted " + std::to_string(o.preempted) + "x)";
      rep.outcomes.push_back(std::move(o));
      if (progress) progress(++done, total, line);
    }
  }
  for (size_t p = 0; p < opt.prompts.size(); ++p) {
    std::set<std::string> distinct;
    for (size_t i = 0; i < rep.outcomes.size(); ++i)
      if (rep.outcomes[i].prompt == p && !rep.configs[i / opt.prompts.size()].deterministic)
        distinct.insert(rep.outcomes[i].logits_digest);
    rep.fast_distinct_results = std::max(rep.fast_distinct_results, int(distinct.size()));
  }
  rep.timing_runs = opt.timing_runs;
  if (opt.timing_runs > 0 && !opt.prompts.empty())
    rep.timing = time_configs(model, vocab, model_path, rep.configs, opt);
  return rep;
}

}  // namespace tzero
