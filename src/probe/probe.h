// tzero probe: how reproducible is an OpenAI-compatible inference server?
//
// For each prompt and each sampling (greedy at temperature 0, and seeded sampling at a
// temperature > 0 unless turned off), the probe sends the same request in three modes:
//   solo    R runs one after another, nothing else in flight (the first is the reference);
//   stream  R runs one after another with stream: true (server-sent events);
//   loaded  R runs, each sent while C other requests (different filler prompts, streamed and
//           longer) are in flight, so that a batching server batches it with them.
// Every run is compared with the first solo run of its prompt and sampling (compare.h): token
// texts and logprobs bit for bit when the server reports logprobs for every run, the texts
// otherwise (report.logprobs is then false).
//
// Errors. A probed request the server answers with an error (an HTTP error status, an error
// object or event, a malformed or cut-off answer: ProbeError::answer_error) is recorded in its
// run (RunRecord::error) and the probe goes on; such a run is not compared. Two exceptions end
// the probe with a ProbeError (the caller exits 2): a 4xx other than 408 and 429 before any
// request has been answered (a wrong model, key or endpoint fails every request the same way),
// and a request that gets no answer at all (server unreachable, timeout, a size cap). A failed
// filler is counted and its error kept (ProbeReport::filler_failures). When no prompt and
// sampling has two answered runs, nothing could be compared (ProbeReport::comparable false):
// the caller exits 2 then too, after writing the report.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe/client.h"
#include "probe/compare.h"

namespace tzero::probe {

struct ProbeOptions {
  std::string base_url, model, api_key;
  std::vector<std::string> prompts;
  int runs = 3;
  int concurrency = 4;  // fillers in flight around each loaded run; 0: no loaded runs
  int max_tokens = 32;
  bool chat = false;
  double timeout_s = 60;
  double sampled_temperature = 0.8;  // the seeded series; 0: greedy only
  uint64_t seed = 1234;
  int top_logprobs = 5;
};

inline const std::vector<std::string>& probe_modes() {
  static const std::vector<std::string> m = {"solo", "stream", "loaded"};
  return m;
}

// The built-in prompts (when no -f) and the fillers of loaded runs.
const std::vector<std::string>& default_prompts();
const std::vector<std::string>& filler_prompts();

// Prompts from a file's text: a JSON array of strings when it starts with '[', else one per
// line that is not blank. Throws ProbeError (naming `name`) when there are none or the JSON is bad.
std::vector<std::string> parse_prompts(const std::string& text, const std::string& name);

// Why a request failed: the HTTP status (0 when the error came in a 200 answer or without one)
// and the message, without the endpoint's URL and the "HTTP nnn: " prefix.
struct RequestError {
  int status = 0;
  std::string message;
};

// The RequestError of a ProbeError raised by a request to `endpoint`.
RequestError request_error(const ProbeError& e, const std::string& endpoint);

// Equal (status, message) pairs counted, the most frequent first (then by status and message).
struct ErrorGroup {
  int status = 0;
  std::string message;
  int count = 0;
};
std::vector<ErrorGroup> group_errors(const std::vector<RequestError>& errors);

// "HTTP 500 'invalid UTF-8'", or "'message'" without a status.
std::string describe_error(const RequestError& e);
// One line: "HTTP 500 'invalid UTF-8' (2), 'the streamed response was cut off ...' (1)".
std::string describe_errors(const std::vector<ErrorGroup>& groups);

struct RunRecord {
  std::string mode;                   // solo, stream, loaded
  int index = 0;                      // within the mode, from 0 (reports count from 1)
  Completion out;                     // empty when the request failed
  std::optional<RequestError> error;  // the request failed: recorded, not compared
  Comparison vs_reference;            // meaningful only for a run that answered
  bool failed() const { return error.has_value(); }
};

// Orders mode names as probe_modes() lists them (solo, stream, loaded), others after.
struct ModeOrder {
  static size_t rank(const std::string& m) {
    const auto& all = probe_modes();
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] == m) return i;
    return all.size();
  }
  bool operator()(const std::string& a, const std::string& b) const {
    const size_t ra = rank(a), rb = rank(b);
    return ra != rb ? ra < rb : a < b;
  }
};

struct ModeStats {
  int runs = 0, diverged = 0, failed = 0;  // runs counts the failed ones too
  double p50_ms = 0, p99_ms = 0;           // over the runs that answered
};

struct SeriesResult {
  std::string name;  // "greedy" or "seeded"
  double temperature = 0;
  std::optional<uint64_t> seed;
  std::vector<RunRecord> runs;  // in the order sent: solo, stream, loaded
  // The reference: the first run that answered (the first solo run unless it failed);
  // runs.size() when none did.
  size_t reference = 0;
  int failed_runs = 0;
  bool compared() const { return runs.size() - size_t(failed_runs) >= 2; }
  RunsSummary summary;  // over the runs that answered, the reference first
  std::map<std::string, ModeStats, ModeOrder> modes;
};

struct PromptResult {
  std::string prompt;
  std::vector<SeriesResult> series;  // series[0] greedy, then seeded when enabled
  bool identical() const;
};

struct ProbeReport {
  ProbeOptions options;
  std::string endpoint;  // the URL the runs were sent to
  std::vector<PromptResult> prompts;
  bool logprobs = true;                     // compared with logprobs (every run had them)
  std::string logprobs_refused;             // the server's error when it refused logprobs requests
  bool identical = true;                    // every comparison matched
  std::map<std::string, int> fingerprints;  // system_fingerprint -> runs that reported it
  int runs_without_fingerprint = 0;
  std::map<std::string, ModeStats, ModeOrder> modes;  // over every prompt and series
  int requests = 0, filler_requests = 0, filler_errors = 0, retries = 0;
  int failed_requests = 0;                    // probed requests recorded as errors
  std::vector<RequestError> filler_failures;  // why each failed filler failed
  bool comparable = true;                     // some prompt and sampling had two runs that answered
  double wall_s = 0;
};

// Why nothing could be compared (when !r.comparable), in one line for the error message.
std::string nothing_compared_reason(const ProbeReport& r);

using ProbeProgress = std::function<void(size_t done, size_t total, const std::string& what)>;

ProbeReport run_probe(const ProbeOptions& options, const ProbeProgress& progress);

// Fills the comparisons, summaries, statistics and the identical flag from the runs (exposed so
// tests can build reports by hand).
void analyze(ProbeReport& r);

}  // namespace tzero::probe
