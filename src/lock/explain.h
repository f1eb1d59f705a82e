// Explaining a local drift: the drifted request rerun here under the lock's engine
// configuration and under this run's, each with a trace (runtime/generate.h, trace/), and the
// two traces diffed (trace/diff.h) to name the first (position, layer, op) that changed, the
// way `tzero audit` names one.
//
// Possible when the lock was made locally with the same engine version, canonical orders,
// custom ops and model file as this run (this binary reruns both sides); otherwise the
// explanation's note says which entry prevents it. When the lock's own configuration does not
// reproduce the lock here, or both configurations give the same trace, the note says so (the
// lock's bits then came from another build or machine).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "lock/lock_file.h"
#include "lock/verify.h"
#include "tzero/engine.h"

namespace tzero::lock {

struct ExplainInput {
  const LockFile* lock = nullptr;
  const LockEntry* entry = nullptr;
  EngineConfig now;
  int now_ctx = 0;                          // the context this run used
  tzero::RequestParams request;             // resolved (runner.h)
  std::string now_digest;                   // what this verify got
  std::vector<EntryDiff> manifest;          // lock vs now
  std::string work_dir;                     // for the two trace files (removed afterwards)
  const std::atomic<bool>* stop = nullptr;  // set: the reruns end early (no explanation)
};

Explanation explain_drift(const ExplainInput& in);

}  // namespace tzero::lock
