#include "lock/verify_run.h"

#include "base/error.h"
#include "lock/explain.h"

namespace tzero::lock {

VerifyReport run_verify(const LockFile& lock, const std::string& lock_path, Runner& runner,
                        const std::atomic<bool>& stop, const VerifyOptions& opt) {
  VerifyReport rep;
  rep.lock_path = lock_path;
  rep.lock_kind = lock.kind;
  rep.now_kind = runner.kind();
  rep.lock_fingerprint = lock.fingerprint;
  rep.lock_source = lock.kind == "local"
                        ? config_json(lock.engine)
                        : nlohmann::json{{"kind", "server"}, {"base_url", lock.base_url}};
  rep.now_source = opt.now_source;
  // A server's manifest is known only after its first answer: compared once something ran.
  auto refresh_manifest = [&] {
    rep.now_fingerprint = runner.fingerprint();
    // A local manifest and a server's (its system_fingerprint only) do not compare entry by
    // entry: across kinds only the results are compared.
    if (lock.kind != runner.kind()) return;
    rep.manifest = diff_entries(lock.manifest, runner.manifest());
    rep.environment = diff_entries(lock.environment, runner.environment());
  };
  refresh_manifest();
  std::vector<LockRequest> requests;
  std::vector<size_t> order;
  for (size_t i = 0; i < lock.entries.size(); ++i) {
    requests.push_back(lock.entries[i].request);
    order.push_back(i);
    RequestVerdict v;
    v.id = lock.entries[i].request.id;
    v.where = lock.entries[i].request.where;
    v.locked = lock.entries[i].result;
    rep.verdicts.push_back(std::move(v));
  }
  if (opt.on_update) opt.on_update(rep);
  try {
    runner.run(
        requests, order,
        [&](size_t i, const LockResult& now) {
          if (rep.done == 0) refresh_manifest();
          RequestVerdict v = compare_results(lock.entries[i], now);
          ++rep.done;
          (v.identical ? rep.identical : rep.drifted) += 1;
          rep.verdicts[i] = std::move(v);
          if (opt.progress) opt.progress(rep.done, rep.verdicts.size(), rep.verdicts[i]);
          if (opt.on_update) opt.on_update(rep);
        },
        stop);
  } catch (const Error& e) {
    rep.interrupted = e.what();
  }
  // The first drifted requests, in the lock's order, explained by traced reruns.
  size_t explained = 0;
  for (size_t i = 0; i < rep.verdicts.size() && opt.now_local && rep.interrupted.empty(); ++i) {
    RequestVerdict& v = rep.verdicts[i];
    if (!v.ran || v.identical || explained >= opt.explain_max || stop) continue;
    ++explained;
    if (opt.explaining) opt.explaining(v);
    ExplainInput in;
    in.lock = &lock;
    in.entry = &lock.entries[i];
    in.now = *opt.now_local;
    in.now_ctx = runner.n_ctx();
    try {
      in.request = *runner.resolved(requests[i]);
    } catch (const std::exception& e) {
      v.explanation.attempted = true;
      v.explanation.note = std::string("cannot resolve the request: ") + e.what();
      continue;
    }
    in.now_digest = v.now.logits_digest;
    in.manifest = rep.manifest;
    in.work_dir = opt.work_dir;
    v.explanation = explain_drift(in);
    if (opt.on_update) opt.on_update(rep);
  }
  if (rep.interrupted.empty() && stop) rep.interrupted = "interrupted (SIGINT)";
  rep.complete = rep.interrupted.empty() && rep.done == rep.verdicts.size();
  if (opt.on_update) opt.on_update(rep);
  return rep;
}

}  // namespace tzero::lock
