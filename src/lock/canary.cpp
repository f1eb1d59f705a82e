// lock/canary.h
#include "lock/canary.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "base/error.h"
#include "base/excerpt.h"
#include "kernels/kernel_set.h"
#include "lock/environment.h"
#include "lock/explain.h"
#include "lock/runner.h"
#include "server/metrics.h"

namespace tzero::lock {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string diff_text(const std::vector<EntryDiff>& diffs) {
  std::string s;
  for (const EntryDiff& d : diffs)
    s += (s.empty() ? "" : "; ") + excerpt(d.key) + ": lock " + excerpt(d.locked.dump()) +
         ", now " + excerpt(d.now.dump());
  return s;
}

// One engine request's state, shared with its callback (which may outlive a stopped wait).
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  ResultCollector collected;
  bool finished = false;
};

}  // namespace

Canary::Canary(tzero::Engine& engine, CanaryOptions options,
               std::function<void(const std::string&)> log)
    : engine_(engine), opt_(std::move(options)), log_(std::move(log)) {
  lock_ = read_lock_file(opt_.lock_path);
  check(!lock_.entries.empty(), opt_.lock_path + ": the lock holds no request");
  chat_template_ = lock_.kind == "local" ? lock_.engine.chat_template : opt_.now.chat_template;
  if (lock_.kind == "local") {
    const Fingerprint fp = engine_fingerprint(opt_.now, engine_);
    now_fingerprint_ = fp.hash;
    manifest_diffs_ = diff_entries(lock_.manifest, fp.manifest);
    const std::vector<EntryDiff> env =
        diff_entries(lock_.environment, environment_json(select_kernels(opt_.now.kernels).name));
    if (!manifest_diffs_.empty())
      log_("canary: " + opt_.lock_path +
           " was made with another configuration, so its answers may differ: " +
           diff_text(manifest_diffs_));
    if (!env.empty())
      log_("canary: " + opt_.lock_path +
           " was made on another machine or version: " + diff_text(env));
  } else {
    log_("canary: " + opt_.lock_path + " was made against a server (" + lock_.base_url +
         "): only its answers are compared");
  }
  std::string dir = opt_.work_dir.empty()
                        ? (std::filesystem::temp_directory_path() / "tzero-canary-XXXXXX").string()
                        : opt_.work_dir + "/tzero-canary-XXXXXX";
  check(mkdtemp(dir.data()) != nullptr, "canary: cannot create a temporary directory");
  opt_.work_dir = dir;
}

Canary::~Canary() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(opt_.work_dir, ec);
}

void Canary::start() {
  thread_ = std::thread([this] { loop(); });
}

void Canary::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_flag_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Canary::loop() {
  for (;;) {
    run_once();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::duration<double>(opt_.interval_s),
                     [this] { return stopping_; }))
      return;
  }
}

bool Canary::run_request(size_t i, LockResult& out) {
  const tzero::RequestParams params =
      engine_request(lock_.entries[i].request, engine_, chat_template_);
  auto pending = std::make_shared<Pending>();
  uint64_t id = 0;
  for (;;) {  // low priority: only while no user request waits and a slot is free
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    const tzero::EngineStats st = engine_.stats();
    if (st.waiting == 0 && st.running < engine_.options().max_seqs) {
      try {
        id = engine_.submit(params, [pending](const tzero::TokenEvent& e) {
          std::lock_guard<std::mutex> lock(pending->mu);
          pending->collected.on_event(e);
          if (e.finished) {
            pending->finished = true;
            pending->cv.notify_all();
          }
        });
        break;
      } catch (const tzero::QueueFull&) {
        // users filled the queue meanwhile: wait for room again
      }
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stopping_; });
  }
  std::unique_lock<std::mutex> lock(pending->mu);
  while (!pending->finished) {
    pending->cv.wait_for(lock, std::chrono::milliseconds(50));
    bool stopping = false;
    {
      std::lock_guard<std::mutex> own(mu_);
      stopping = stopping_;
    }
    if (stopping && !pending->finished) {
      lock.unlock();
      engine_.cancel(id);  // its final event, if it ever comes, goes to `pending` alone
      return false;
    }
  }
  out = pending->collected.result;
  return true;
}

void Canary::run_once() {
  int drifted = 0;
  VerifyReport rep;
  rep.lock_path = opt_.lock_path;
  rep.lock_kind = lock_.kind;
  rep.now_kind = "server (its drift canary)";
  rep.lock_fingerprint = lock_.fingerprint;
  rep.now_fingerprint = now_fingerprint_;
  rep.manifest = manifest_diffs_;
  for (size_t i = 0; i < lock_.entries.size(); ++i) {
    LockResult now;
    RequestVerdict v;
    try {
      if (!run_request(i, now)) return;  // stopped
      v = compare_results(lock_.entries[i], now);
    } catch (const std::exception& e) {  // the engine refuses a request it once ran
      v.id = lock_.entries[i].request.id;
      v.where = lock_.entries[i].request.where;
      v.differs = {"refused"};
      v.ran = true;
      v.explanation.note = std::string("refused: ") + e.what();
      log_("canary: drift: " + v.where + ": refused: " + e.what());
      ++drifted;
      rep.verdicts.push_back(v);
      continue;
    }
    rep.verdicts.push_back(v);
    if (v.identical) continue;
    ++drifted;
    log_("canary: drift: " + v.where + ": " + verdict_line(v));
    bool explain_now = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      explain_now = !explained_ && !stopping_;
      explained_ = true;
    }
    if (explain_now) rep.verdicts.back().explanation = explain(v, i);
  }
  std::string line;
  std::unique_lock<std::mutex> lock(mu_);
  ++runs_;
  drift_total_ += uint64_t(drifted);
  last_drifted_ = drifted;
  last_run_ = unix_now();
  if (drifted == 0) {
    last_success_ = last_run_;
    explained_ = false;
  }
  rep.done = rep.verdicts.size();
  rep.drifted = size_t(drifted);
  rep.identical = rep.done - rep.drifted;
  rep.complete = true;
  last_report_ = std::move(rep);
  if (runs_ == 1 || drifted > 0)
    line = "canary: run " + std::to_string(runs_) + ": " +
           std::to_string(lock_.entries.size() - size_t(drifted)) + " of " +
           std::to_string(lock_.entries.size()) + " identical" +
           (drifted > 0 ? ", " + std::to_string(drifted) + " drifted" : std::string());
  lock.unlock();  // stderr may block: never while /health waits for the lock
  if (!line.empty()) log_(line);
}

Explanation Canary::explain(const RequestVerdict& v, size_t i) {
  ExplainInput in;
  in.lock = &lock_;
  in.entry = &lock_.entries[i];
  in.now = opt_.now;
  in.now_ctx = engine_.info().n_ctx;
  in.request = engine_request(lock_.entries[i].request, engine_, chat_template_);
  in.now_digest = v.now.logits_digest;
  in.manifest = manifest_diffs_;
  in.work_dir = opt_.work_dir;
  in.stop = &stop_flag_;
  const Explanation x = explain_drift(in);
  if (x.found)
    log_("canary: " + v.where + ": the first op that changed: position " + std::to_string(x.pos) +
         ", layer " + std::to_string(x.layer) + ", " + x.op + " (" + x.description + ")" +
         (x.note.empty() ? "" : "; " + x.note));
  else
    log_("canary: " + v.where + ": no op named: " + x.note);
  return x;
}

std::string Canary::last_report_html() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (runs_ > 0) return verify_html(last_report_);
  VerifyReport none;
  none.lock_path = opt_.lock_path;
  none.interrupted = "the canary's first run has not finished yet";
  return verify_html(none);
}

bool Canary::drifted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_drifted_ > 0;
}

nlohmann::json Canary::health_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto stamp = [](double t) { return t > 0 ? nlohmann::json(t) : nlohmann::json(nullptr); };
  return {{"state", last_drifted_ > 0 ? "drifted" : "ok"},
          {"runs", runs_},
          {"drifted_requests", last_drifted_},
          {"drift_total", drift_total_},
          {"last_run", stamp(last_run_)},
          {"last_success", stamp(last_success_)}};
}

void Canary::render_metrics(std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto metric = [&](const char* name, const char* type, const char* help, double v) {
    server::metric_header(out, name, type, help);
    server::metric_line(out, name, v);
  };
  metric("tzero_canary_runs_total", "counter",
         "Drift canary: completed reruns of the lock's requests (--canary).", double(runs_));
  metric("tzero_canary_drift_total", "counter",
         "Drift canary: requests whose answer differed from the lock's.", double(drift_total_));
  metric("tzero_canary_last_success_timestamp_seconds", "gauge",
         "Drift canary: Unix time of the end of the last run with no drift (0: none yet).",
         last_success_);
}

}  // namespace tzero::lock
