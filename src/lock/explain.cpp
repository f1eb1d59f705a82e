#include "lock/explain.h"

#include <filesystem>

#include "base/error.h"
#include "runtime/generate.h"
#include "trace/diff.h"

namespace tzero::lock {

namespace {

GenerateOptions traced(const EngineConfig& c, int ctx, const tzero::RequestParams& p,
                       const std::string& trace_path) {
  GenerateOptions g;
  g.prompt_tokens = p.prompt_tokens;
  g.n_predict = p.max_tokens;
  g.compute.n_threads = c.threads;
  g.compute.n_ctx = ctx;
  g.sampling = p.sampling;
  g.compute.kernels = c.kernels;
  g.compute.mode = *parse_mode(c.mode);
  g.compute.kv_type = parse_kv_type(c.kv_type);
  g.stop = p.stop;
  g.stop_tokens = p.stop_tokens;
  g.ignore_eos = p.ignore_eos;
  g.grammar = p.grammar;
  g.trace_path = trace_path;
  g.trace_metadata = "{}";
  return g;
}

}  // namespace

Explanation explain_drift(const ExplainInput& in) {
  Explanation x;
  x.attempted = true;
  const LockFile& lock = *in.lock;
  if (lock.kind != "local") {
    x.note = "the lock came from a server: its configuration cannot be rerun here";
    return x;
  }
  for (const EntryDiff& d : in.manifest)
    for (const char* key : {"engine", "canonical_orders", "model_xxh128", "custom_ops"})
      if (d.key == key) {
        x.note = std::string("cannot rerun the lock's side here: its ") + key + " differs (lock " +
                 d.locked.dump() + ", now " + d.now.dump() + ")";
        return x;
      }
  const std::optional<Mode> lock_mode = parse_mode(lock.engine.mode);
  if (!lock_mode || *lock_mode == Mode::portable) {
    x.note = "the lock's mode '" + lock.engine.mode + "' cannot be rerun here";
    return x;
  }
  const std::string a_path = in.work_dir + "/lock.trace", b_path = in.work_dir + "/now.trace";
  try {
    const auto model = Model::load(in.now.model);
    const Vocab vocab = Vocab::from_gguf(model->gguf());
    EngineConfig lock_side = lock.engine;
    lock_side.model = in.now.model;  // the same file (model_xxh128 agrees)
    // The lock's context, as the engine resolved it (0: the default, which is this model's).
    const int lock_ctx = lock.engine.ctx > 0 ? lock.engine.ctx : in.now_ctx;
    GenerateOptions ga = traced(lock_side, lock_ctx, in.request, a_path);
    GenerateOptions gb = traced(in.now, in.now_ctx, in.request, b_path);
    if (in.stop) ga.interrupted = gb.interrupted = [s = in.stop] { return s->load(); };
    const GenerateResult a = generate(*model, vocab, ga);
    const GenerateResult b = generate(*model, vocab, gb);
    if (in.stop && in.stop->load()) throw Error("stopped before the reruns ended");
    const TraceDiff d = diff_traces(read_trace(a_path), read_trace(b_path));
    if (d.has_first) {
      x.found = true;
      x.pos = d.first_pos;
      x.layer = d.first_layer;
      x.op = d.first_op;
      x.description = std::string(op_description(d.first_op));
    } else if (d.identical()) {
      x.note = "both configurations give identical traces here";
    } else {
      x.note = "the traces hold different records (one run generated more tokens)";
    }
    std::vector<std::string> notes;
    if (in.now.mode != "deterministic" || lock.engine.mode != "deterministic")
      notes.push_back("fast mode has no contract: a rerun may differ again");
    if (a.logits_digest != in.entry->result.logits_digest &&
        !in.entry->result.logits_digest.empty())
      notes.push_back(
          "rerunning the lock's configuration here does not reproduce the lock (digest " +
          a.logits_digest + ", lock " + in.entry->result.logits_digest +
          "): the lock's bits came from another build or machine");
    if (b.logits_digest != in.now_digest && in.now.mode == "deterministic")
      notes.push_back("internal: the traced rerun's digest " + b.logits_digest +
                      " differs from the engine's " + in.now_digest);
    for (const std::string& n : notes) x.note += (x.note.empty() ? "" : "; ") + n;
  } catch (const std::exception& e) {
    x.note = std::string("the traced rerun failed: ") + e.what();
  }
  std::error_code ec;
  std::filesystem::remove(a_path, ec);
  std::filesystem::remove(b_path, ec);
  return x;
}

}  // namespace tzero::lock
