// The server's Prometheus metrics (GET /metrics, text exposition format 0.0.4): HTTP requests
// by endpoint and status, token counts, request outcomes, client disconnects, histograms of
// time to first token and time per output token, and the engine's gauges (queue depth,
// running sequences, KV blocks) read from Engine::stats() at scrape time. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tzero/engine.h"

namespace tzero::server {

// The exposition lines of one metric: its HELP and TYPE, then a sample ("%.17g").
void metric_header(std::string& out, const std::string& name, const char* type, const char* help);
void metric_line(std::string& out, const std::string& name, double v);

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Appends the _bucket, _sum and _count lines of `name`.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last one is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One finished HTTP exchange (any route; streams count when their headers go out).
  void count_request(const std::string& endpoint, int status);
  // One generation choice that ended: its reason (stop, length, cancelled, disconnected), its
  // token counts and timings (ttft: request arrival to first token; tpot: mean time between
  // later tokens, observed when at least two tokens came).
  void count_choice(const std::string& reason, int prompt_tokens, int generated_tokens,
                    double ttft_s, double tpot_s, bool have_ttft, bool have_tpot);
  void count_disconnect();
  uint64_t disconnects() const;

  std::string render(const tzero::EngineStats& engine, int in_flight) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> outcomes_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, disconnects_ = 0;
  Histogram ttft_, tpot_;
};

}  // namespace tzero::server
