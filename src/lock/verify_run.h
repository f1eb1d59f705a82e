// Driving a verify: every lock entry rerun through a Runner (local or server), compared as it
// finishes (lock/verify.h), then the first few local drifts (in the lock's order) explained by
// traced reruns (lock/explain.h); the report handed to on_update after every request so that a
// caller can write it incrementally. A stop (SIGINT) or a failing request (a server that died) ends
// the run early: the report then says complete = false and why, and keeps every verdict so far.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "lock/lock_file.h"
#include "lock/runner.h"
#include "lock/verify.h"

namespace tzero::lock {

struct VerifyOptions {
  const EngineConfig* now_local = nullptr;  // this run's engine flags (null: a server)
  nlohmann::json now_source;                // as the report shows it
  size_t explain_max = 3;                   // drifted requests explained by traced reruns
  std::string work_dir;                     // for the traces
  // After each request: (verified so far, total, its verdict), and the report as it stands.
  std::function<void(size_t, size_t, const RequestVerdict&)> progress;
  std::function<void(const VerifyReport&)> on_update;
  std::function<void(const RequestVerdict&)> explaining;  // before a drift's traced reruns
};

VerifyReport run_verify(const LockFile& lock, const std::string& lock_path, Runner& runner,
                        const std::atomic<bool>& stop, const VerifyOptions& opt);

}  // namespace tzero::lock
