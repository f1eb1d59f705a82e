// tzero verify: a lock's requests rerun and compared, request by request, with what the lock
// recorded. A request is identical when everything both sides recorded agrees exactly: the text
// and finish reason always, the token ids, the logits digest and the stop reason when both have
// them, the logprobs (as written) when both have them. Otherwise it drifted, and `differs` says
// which of those differ; a local drift may be explained (lock/explain.h).
//
// The report also lists which manifest entries (runtime/fingerprint.h) and which environment
// entries (lock/environment.h) differ between the lock and this run, as dotted paths
// ("kv_cache", "not_hashed_proven_invariant.kernel_set", "cpu.kernel_variant").
//
// A verify cut short (SIGINT, a server that stops answering) keeps what it verified:
// complete = false, `interrupted` says why, and the requests not run are listed as such.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lock/lock_file.h"

namespace tzero::lock {

struct EntryDiff {
  std::string key;             // dotted path
  nlohmann::json locked, now;  // null when absent on that side
};

// Every leaf path whose value differs (objects are walked; arrays and scalars compared whole).
std::vector<EntryDiff> diff_entries(const nlohmann::json& locked, const nlohmann::json& now,
                                    const std::string& prefix = "");

struct Explanation {
  bool attempted = false;
  bool found = false;  // a first differing traced op
  uint32_t pos = 0;
  int layer = -1;
  std::string op, description;  // description: trace/diff.h's words for the op
  std::string note;             // why it could not be explained, or what else was seen
};

struct RequestVerdict {
  std::string id, where;
  bool ran = false;
  bool identical = false;
  std::vector<std::string> compared;  // "text", "finish_reason", "tokens", "logits_digest", ...
  std::vector<std::string> differs;
  int first_token = -1;  // the first generated token that differs (when both have tokens)
  LockResult locked, now;
  Explanation explanation;
};

// Compares one request's results.
RequestVerdict compare_results(const LockEntry& locked, const LockResult& now);

struct VerifyReport {
  std::string lock_path, lock_kind, now_kind;  // kinds: "local" or "server"
  std::string lock_fingerprint, now_fingerprint;
  nlohmann::json lock_source, now_source;
  std::vector<EntryDiff> manifest, environment;
  std::vector<RequestVerdict> verdicts;  // one per lock entry, in the lock's order
  size_t done = 0, identical = 0, drifted = 0;
  bool complete = false;
  std::string interrupted;  // why it stopped early ("" when it did not)
};

nlohmann::json verify_json(const VerifyReport& r);
std::string verify_html(const VerifyReport& r);  // a self-contained page (lock/verify_html.cpp)
// One line per request for the terminal ("identical", or "DRIFTED: tokens, logits_digest ...").
std::string verdict_line(const RequestVerdict& v);

}  // namespace tzero::lock
