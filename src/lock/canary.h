// The drift canary of `tzero serve --canary LOCK.json` (docs/SERVER.md, "Drift canary"): the
// lock's requests rerun through the server's own engine every interval and compared with what
// the lock recorded (lock/verify.h), so a server notices by itself when an upgrade (of tzero,
// a driver, a library, the machine) changed answers that were stable.
//
// - Low priority: a request is submitted only while no user request waits and a batch slot is
//   free, one at a time, so user traffic is never delayed by more than the one canary request
//   in the batch (which, by batch invariance, changes none of their bits).
// - At start the lock's manifest and environment are compared with this server's: differences
//   are logged by key ("the lock was made on another machine or version: ...").
// - A drift is logged with the request, what differs, the first differing token and, for the
//   first drift after a clean run, the first op that changed (lock/explain.h: traced reruns
//   of the lock's configuration and this server's).
// - Metrics: tzero_canary_runs_total, tzero_canary_drift_total (drifted requests),
//   tzero_canary_last_success_timestamp_seconds (the end of the last run with no drift).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "lock/lock_file.h"
#include "lock/verify.h"
#include "tzero/engine.h"

namespace tzero::lock {

struct CanaryOptions {
  std::string lock_path;
  double interval_s = 600;  // from the end of one run to the start of the next
  EngineConfig now;         // this server's engine flags (manifest, explanations)
  std::string work_dir;     // for an explanation's two traces ("": the system's temp dir)
};

class Canary {
 public:
  // Reads the lock (tzero::Error for an unusable one or one from a server) and logs how its
  // manifest and environment differ from this server's. `log` gets one line at a time.
  Canary(tzero::Engine& engine, CanaryOptions options, std::function<void(const std::string&)> log);
  ~Canary();  // stop()
  Canary(const Canary&) = delete;
  Canary& operator=(const Canary&) = delete;

  void start();  // a run at once, then one every interval, on a thread of its own
  void stop();   // cancels a request in flight and joins

  // "ok" (no run yet, or the last run identical), "drifted" (the last run had a drift).
  bool drifted() const;
  // {"state", "runs", "drifted_requests", "drift_total", "last_run", "last_success"} for
  // /health.
  nlohmann::json health_json() const;
  // The Prometheus lines (HELP, TYPE and value) of the three metrics.
  void render_metrics(std::string& out) const;
  // The last finished run as verify's HTML report (lock/verify.h); before one, a page that
  // says the first run is under way.
  std::string last_report_html() const;

 private:
  void loop();
  void run_once();
  // Submits one request when the engine has room and waits for its result; false when stopped.
  bool run_request(size_t i, LockResult& out);
  Explanation explain(const RequestVerdict& v, size_t i);

  tzero::Engine& engine_;
  CanaryOptions opt_;
  std::function<void(const std::string&)> log_;
  LockFile lock_;
  std::vector<EntryDiff> manifest_diffs_;
  std::string chat_template_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> stop_flag_{false};  // stopping_ for the explanation's reruns
  uint64_t runs_ = 0, drift_total_ = 0;
  double last_run_ = 0, last_success_ = 0;  // Unix seconds; 0: never
  int last_drifted_ = 0;                    // drifted requests of the last run
  bool explained_ = false;                  // since the last clean run
  VerifyReport last_report_;                // the last finished run
  std::string now_fingerprint_;
  std::thread thread_;
};

}  // namespace tzero::lock
