// The probe's outputs: the JSON object (`--json`, report.json), the terminal table, and the HTML
// report (index.html: tables and inline SVG charts of unique outputs per prompt, first
// divergence positions and latency per mode; self-contained, no scripts).
//
// JSON layout (numbers in ms for latencies; first_divergence is a token index with logprobs, a
// byte offset text only, null when every run matched):
//   {tool, version, identical, comparable, logprobs, divergence_unit, configuration{...},
//    system_fingerprints: [{value, runs}], runs_without_fingerprint,
//    prompts: [{prompt, identical, temperature: 0, compared, failed_runs, unique_outputs,
//               first_divergence, max_logprob_diff (null text only), runs, diverged_runs,
//               modes{solo|stream|loaded: {runs, diverged, failed, p50_ms, p99_ms}},
//               reference_text (null when no run answered), reference_run {mode, run},
//               run_details[... a failed run: identical null, error {status, message}],
//               seeded: {temperature, seed, <the same fields>} (absent when turned off)}],
//    latency_ms: {solo|stream|loaded: {runs, p50, p99}}, requests, failed_requests,
//    errors: [{status, message, count}], filler_requests, filler_errors,
//    filler_error_reasons: [{status, message, count}], retries, wall_s}
// status is null for an error that came without an HTTP error status (an error event in a
// stream, a malformed or cut-off answer).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "probe/probe.h"

namespace tzero::probe {

nlohmann::ordered_json probe_json(const ProbeReport& r);
std::string probe_table(const ProbeReport& r);  // for the terminal (stdout)
std::string probe_html(const ProbeReport& r);

}  // namespace tzero::probe
