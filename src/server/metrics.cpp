// Prometheus metrics (server/metrics.h).
#include "server/metrics.h"

#include <cstdio>

#include "distributed/experts.h"
#include "distributed/pipeline.h"
#include "distributed/transport.h"

namespace tzero::server {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

void metric_header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void metric_line(std::string& out, const std::string& name, double v) {
  out += name + " " + num(v) + "\n";
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  metric_line(out, name + "_sum", sum_);
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_choice(const std::string& reason, int prompt_tokens, int generated_tokens,
                           double ttft_s, double tpot_s, bool have_ttft, bool have_tpot) {
  std::lock_guard<std::mutex> lock(mu_);
  ++outcomes_[reason];
  prompt_tokens_ += uint64_t(prompt_tokens);
  generated_tokens_ += uint64_t(generated_tokens);
  if (have_ttft) ttft_.observe(ttft_s);
  if (have_tpot) tpot_.observe(tpot_s);
}

void Metrics::count_disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  ++disconnects_;
}

uint64_t Metrics::disconnects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disconnects_;
}

std::string Metrics::render(const tzero::EngineStats& e, int in_flight) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  metric_header(out, "tzero_http_requests_total", "counter",
                "HTTP requests by endpoint and status.");
  for (const auto& [key, n] : requests_)
    out += "tzero_http_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  metric_header(out, "tzero_requests_finished_total", "counter",
                "Generated choices by outcome: stop, length, cancelled (shutdown), disconnected.");
  for (const auto& [reason, n] : outcomes_)
    out += "tzero_requests_finished_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  metric_header(out, "tzero_client_disconnects_total", "counter",
                "Streams whose client went away; their requests were cancelled.");
  metric_line(out, "tzero_client_disconnects_total", double(disconnects_));
  metric_header(out, "tzero_prompt_tokens_total", "counter", "Prompt tokens of finished choices.");
  metric_line(out, "tzero_prompt_tokens_total", double(prompt_tokens_));
  metric_header(out, "tzero_generated_tokens_total", "counter",
                "Generated tokens of finished choices.");
  metric_line(out, "tzero_generated_tokens_total", double(generated_tokens_));
  metric_header(out, "tzero_time_to_first_token_seconds", "histogram",
                "From the request's arrival to its first generated token.");
  ttft_.render(out, "tzero_time_to_first_token_seconds");
  metric_header(out, "tzero_time_per_output_token_seconds", "histogram",
                "Mean time between generated tokens after the first, per choice.");
  tpot_.render(out, "tzero_time_per_output_token_seconds");
  metric_header(out, "tzero_http_in_flight", "gauge", "Generation requests being served.");
  metric_line(out, "tzero_http_in_flight", in_flight);
  metric_header(out, "tzero_queue_depth", "gauge", "Engine requests waiting to be scheduled.");
  metric_line(out, "tzero_queue_depth", e.waiting);
  metric_header(out, "tzero_running", "gauge", "Engine sequences running.");
  metric_line(out, "tzero_running", e.running);
  metric_header(out, "tzero_kv_blocks_used", "gauge", "KV cache blocks held by running sequences.");
  metric_line(out, "tzero_kv_blocks_used", e.kv_blocks_used);
  metric_header(out, "tzero_kv_blocks_cached", "gauge",
                "Free KV blocks holding a reusable prefix.");
  metric_line(out, "tzero_kv_blocks_cached", e.kv_blocks_cached);
  metric_header(out, "tzero_kv_blocks_total", "gauge", "KV cache blocks in the pool.");
  metric_line(out, "tzero_kv_blocks_total", e.kv_blocks_total);
  metric_header(out, "tzero_prefix_cache_enabled", "gauge",
                "1 when prompt prefixes are reused, 0 when the option turns it off.");
  metric_line(out, "tzero_prefix_cache_enabled", e.prefix_cache ? 1 : 0);
  metric_header(out, "tzero_recurrent_state_bytes", "gauge",
                "Recurrent (linear-attention) state held beside the KV pool: every sequence slot's "
                "and every snapshot slot's.");
  metric_line(out, "tzero_recurrent_state_bytes", double(e.state_bytes));
  metric_header(
      out, "tzero_recurrent_state_snapshots", "gauge",
      "Snapshots of recurrent states at prompt block boundaries held for the prefix cache.");
  metric_line(out, "tzero_recurrent_state_snapshots", e.state_snapshots);
  metric_header(out, "tzero_engine_steps_total", "counter", "Batched forward passes.");
  metric_line(out, "tzero_engine_steps_total", double(e.steps));
  metric_header(out, "tzero_engine_preemptions_total", "counter",
                "Sequences preempted and recomputed.");
  metric_line(out, "tzero_engine_preemptions_total", double(e.preemptions));
  metric_header(out, "tzero_engine_drafted_tokens_total", "counter",
                "Speculative decoding: draft tokens fed for verification (--spec-type).");
  metric_line(out, "tzero_engine_drafted_tokens_total", double(e.drafted_tokens));
  metric_header(out, "tzero_engine_accepted_tokens_total", "counter",
                "Speculative decoding: drafts equal to the token sampled at their place.");
  metric_line(out, "tzero_engine_accepted_tokens_total", double(e.accepted_tokens));
  metric_header(
      out, "tzero_engine_rejected_tokens_total", "counter",
      "Speculative decoding: drafts that differed from the token sampled at their place.");
  metric_line(out, "tzero_engine_rejected_tokens_total",
              double(e.drafted_tokens - e.accepted_tokens));
  metric_header(out, "tzero_engine_cached_tokens_total", "counter",
                "Prompt tokens found in the prefix cache.");
  metric_line(out, "tzero_engine_cached_tokens_total", double(e.cached_tokens));
  metric_header(out, "tzero_engine_requests_finished_total", "counter",
                "Engine requests that finished (stop or length).");
  metric_line(out, "tzero_engine_requests_finished_total", double(e.requests_finished));
  metric_header(out, "tzero_engine_requests_cancelled_total", "counter",
                "Engine requests cancelled (client disconnect or shutdown).");
  metric_line(out, "tzero_engine_requests_cancelled_total", double(e.requests_cancelled));
  if (dist::world().several()) {  // a pipeline over MPI ranks (docs/DISTRIBUTED.md)
    const dist::RingTraffic t = dist::ring_traffic();
    metric_header(out, "tzero_pipeline_passes_total", "counter",
                  "Passes that went round the MPI ranks.");
    metric_line(out, "tzero_pipeline_passes_total", double(t.passes));
    metric_header(out, "tzero_pipeline_bytes_per_hop_total", "counter",
                  "Bytes of those passes: each hop between two ranks carried them once.");
    metric_line(out, "tzero_pipeline_bytes_per_hop_total", double(t.pass_bytes));
    metric_header(out, "tzero_pipeline_most_in_flight", "gauge",
                  "The most passes out on the ranks at once (micro-batches).");
    metric_line(out, "tzero_pipeline_most_in_flight", double(t.most_in_flight));
    const dist::ExpertTraffic x = dist::expert_traffic();
    metric_header(out, "tzero_expert_slots_total", "counter",
                  "Expert slots of rank 0's layers computed on other ranks (--expert-parallel).");
    metric_line(out, "tzero_expert_slots_total", double(x.slots));
    metric_header(out, "tzero_expert_bytes_total", "counter",
                  "Bytes of those requests and their answers.");
    metric_line(out, "tzero_expert_bytes_total", double(x.bytes));
  }
  return out;
}

}  // namespace tzero::server
