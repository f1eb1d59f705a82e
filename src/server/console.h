// The server's console (GET / on `tzero serve`): one self-contained page (inline style and
// script, no external asset or font) showing what runs (model, fingerprint, engine options,
// machine) and, refreshed every 2 s from /health and /metrics, the request and token rates,
// batch occupancy, KV-cache use and the drift canary's state, with a link to the canary's last
// report (GET /canary) and the command that probes this server or another. Its #verdict banner
// says whether the server is serving as locked (canary clean or absent) or drifting.
#pragma once

#include <string>

namespace tzero::server {

struct ConsoleInfo {
  std::string model, fingerprint, version, kernels, mode, kv_type, machine;
  int n_ctx = 0, slots = 0, threads = 0;
  bool api_key = false;   // the page then authenticates like the API (Basic, the key as password)
  bool canary = false;    // --canary given: /canary holds its last report
  bool drifting = false;  // the canary's last run drifted (the banner then says so)
};

std::string console_html(const ConsoleInfo& info);

}  // namespace tzero::server
