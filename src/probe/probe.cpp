#include "probe/probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/bounded_json.h"
#include "tokenizer/unicode.h"

namespace tzero::probe {

const std::vector<std::string>& default_prompts() {
  static const std::vector<std::string> p = {
      "Once upon a time",
      "The capital of France is",
      "Write a haiku about the sea.",
      "def fibonacci(n):",
  };
  return p;
}

const std::vector<std::string>& filler_prompts() {
  static const std::vector<std::string> p = {
      "Tell me a long story about a dragon who learns to bake bread in a small mountain village.",
      "List the planets of the solar system with one fact about each.",
      "Explain how a hash table works.",
      "The quick brown fox",
      "Translate into French: the weather is lovely today and we should go for a walk.",
      "1, 2, 3, 4, 5,",
      "Summarize the plot of Hamlet in a few sentences, then describe its main characters.",
      "Why is the sky blue?",
      "Write a Python function that reverses a linked list, with comments.",
      "A recipe for pancakes:",
      "In the beginning",
      "Describe the water cycle step by step for a ten-year-old.",
  };
  return p;
}

std::vector<std::string> parse_prompts(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json j;
    try {
      j = parse_json_bounded(text);
    } catch (const nlohmann::json::exception& e) {
      throw ProbeError(name + ": not a JSON array of strings (" + e.what() + ")");
    }
    for (const auto& v : j) {
      if (!v.is_string()) throw ProbeError(name + ": not a JSON array of strings");
      out.push_back(v.get<std::string>());
    }
  } else {
    size_t start = 0;
    while (start <= text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) out.push_back(line);
      start = nl + 1;
    }
  }
  if (out.empty()) throw ProbeError(name + ": no prompts in the file");
  for (size_t i = 0; i < out.size(); ++i) {
    if (!unicode::is_valid(out[i]))
      throw ProbeError(name + ": prompt " + std::to_string(i + 1) + " is not valid UTF-8");
    if (out[i].find('\0') != std::string::npos)
      throw ProbeError(name + ": prompt " + std::to_string(i + 1) + " contains a NUL byte");
  }
  return out;
}

RequestError request_error(const ProbeError& e, const std::string& endpoint) {
  RequestError r;
  r.status = e.http_status;
  r.message = e.what();
  if (r.message.rfind(endpoint + ": ", 0) == 0) r.message.erase(0, endpoint.size() + 2);
  const std::string http = "HTTP " + std::to_string(r.status) + ": ";
  if (r.status != 0 && r.message.rfind(http, 0) == 0) r.message.erase(0, http.size());
  return r;
}

std::vector<ErrorGroup> group_errors(const std::vector<RequestError>& errors) {
  std::map<std::pair<int, std::string>, int> counts;
  for (const auto& e : errors) ++counts[{e.status, e.message}];
  std::vector<ErrorGroup> g;
  for (const auto& [k, n] : counts) g.push_back({k.first, k.second, n});
  std::stable_sort(g.begin(), g.end(),
                   [](const ErrorGroup& a, const ErrorGroup& b) { return a.count > b.count; });
  return g;
}

std::string describe_error(const RequestError& e) {
  return (e.status != 0 ? "HTTP " + std::to_string(e.status) + " " : std::string()) + "'" +
         e.message + "'";
}

std::string describe_errors(const std::vector<ErrorGroup>& groups) {
  std::string s;
  for (const auto& g : groups) {
    if (!s.empty()) s += ", ";
    s += describe_error({g.status, g.message}) + " (" + std::to_string(g.count) + ")";
  }
  return s;
}

std::string nothing_compared_reason(const ProbeReport& r) {
  std::vector<RequestError> errors;
  int runs = 0;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) {
      runs += int(s.runs.size());
      for (const auto& run : s.runs)
        if (run.error) errors.push_back(*run.error);
    }
  std::string m = "nothing could be compared: no prompt and sampling had two runs that answered (" +
                  std::to_string(errors.size()) + " of " + std::to_string(runs) +
                  " probed requests failed";
  if (!errors.empty()) m += ": " + describe_errors(group_errors(errors));
  return m + ")";
}

bool PromptResult::identical() const {
  for (const auto& s : series)
    if (!s.summary.identical) return false;
  return true;
}

namespace {
ModeStats stats_of(const std::vector<const RunRecord*>& runs) {
  ModeStats m;
  std::vector<double> ms;
  for (const RunRecord* r : runs) {
    ++m.runs;
    if (r->failed()) {
      ++m.failed;
      continue;
    }
    m.diverged += !r->vs_reference.identical;
    ms.push_back(r->out.latency_ms);
  }
  m.p50_ms = percentile(ms, 50);
  m.p99_ms = percentile(ms, 99);
  return m;
}

// One loaded run: `concurrency` fillers are sent first and the probed request follows once each
// has begun to answer (or after a bounded wait); the fillers are cut off when it is done.
Completion loaded_run(const Client& client, const CompletionRequest& req, int concurrency,
                      size_t filler_base, double timeout_s, ProbeReport& rep) {
  std::atomic<bool> stop{false};
  std::vector<std::atomic<bool>> started(static_cast<size_t>(concurrency));
  std::mutex mu;
  std::vector<std::thread> fillers;
  for (int i = 0; i < concurrency; ++i) {
    CompletionRequest f = req;
    f.prompt = filler_prompts()[(filler_base + size_t(i)) % filler_prompts().size()];
    f.stream = true;
    f.max_tokens = std::max(2 * req.max_tokens, 16) + 4 * i;  // longer: still in flight after
    f.temperature = 0;
    f.seed.reset();
    fillers.emplace_back([&, f, i] {
      try {
        client.complete(f, &stop, &started[size_t(i)]);
      } catch (const ProbeError& e) {
        std::lock_guard<std::mutex> lock(mu);
        ++rep.filler_errors;
        rep.filler_failures.push_back(request_error(e, rep.endpoint));
      }
      started[size_t(i)] = true;
    });
  }
  rep.filler_requests += concurrency;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::min(timeout_s, 2.0));
  while (std::chrono::steady_clock::now() < deadline &&
         !std::all_of(started.begin(), started.end(), [](const auto& s) { return s.load(); }))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Completion c;
  try {
    c = client.complete(req);
  } catch (...) {
    stop = true;
    for (auto& t : fillers) t.join();
    throw;
  }
  stop = true;
  for (auto& t : fillers) t.join();
  return c;
}
}  // namespace

void analyze(ProbeReport& r) {
  r.logprobs = true;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series)
      for (const auto& run : s.runs)
        if (!run.failed()) r.logprobs = r.logprobs && run.out.has_logprobs;
  r.identical = true;
  r.comparable = false;
  r.failed_requests = 0;
  r.fingerprints.clear();
  r.runs_without_fingerprint = 0;
  std::map<std::string, std::vector<const RunRecord*>, ModeOrder> all_modes;
  for (auto& p : r.prompts)
    for (auto& s : p.series) {
      std::vector<Completion> outs;  // the runs that answered, in order: the reference first
      s.failed_runs = 0;
      s.reference = s.runs.size();
      for (size_t i = 0; i < s.runs.size(); ++i) {
        if (s.runs[i].failed()) {
          ++s.failed_runs;
          continue;
        }
        if (outs.empty()) s.reference = i;
        outs.push_back(s.runs[i].out);
      }
      r.failed_requests += s.failed_runs;
      s.summary = summarize_runs(outs, r.logprobs);
      std::map<std::string, std::vector<const RunRecord*>, ModeOrder> by_mode;
      for (size_t i = 0, k = 0; i < s.runs.size(); ++i) {
        RunRecord& run = s.runs[i];
        by_mode[run.mode].push_back(&run);
        all_modes[run.mode].push_back(&run);
        if (run.failed()) {
          run.vs_reference = Comparison{};
          continue;
        }
        run.vs_reference = s.summary.per_run[k++];
        if (run.out.system_fingerprint.empty())
          ++r.runs_without_fingerprint;
        else
          ++r.fingerprints[run.out.system_fingerprint];
      }
      s.modes.clear();
      for (const auto& [mode, runs] : by_mode) s.modes[mode] = stats_of(runs);
      r.identical = r.identical && s.summary.identical;
      r.comparable = r.comparable || s.compared();
    }
  r.modes.clear();
  for (const auto& [mode, runs] : all_modes) r.modes[mode] = stats_of(runs);
}

ProbeReport run_probe(const ProbeOptions& opt, const ProbeProgress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  ProbeReport rep;
  rep.options = opt;
  const Client client(opt.base_url, opt.api_key, opt.timeout_s);
  rep.endpoint = client.endpoint(opt.chat);

  struct Sampling {
    std::string name;
    double temperature;
    std::optional<uint64_t> seed;
  };
  std::vector<Sampling> samplings = {{"greedy", 0.0, std::nullopt}};
  if (opt.sampled_temperature > 0)
    samplings.push_back({"seeded", opt.sampled_temperature, opt.seed});
  std::vector<std::string> modes = probe_modes();
  if (opt.concurrency <= 0) modes.pop_back();  // no loaded runs

  const size_t total = opt.prompts.size() * samplings.size() * modes.size() * size_t(opt.runs);
  size_t done = 0, filler_base = 0;
  int answered = 0;  // probed requests answered so far
  bool logprobs = opt.top_logprobs >= 0;
  for (size_t p = 0; p < opt.prompts.size(); ++p) {
    PromptResult pr;
    pr.prompt = opt.prompts[p];
    for (const auto& smp : samplings) {
      SeriesResult s;
      s.name = smp.name;
      s.temperature = smp.temperature;
      s.seed = smp.seed;
      for (const auto& mode : modes)
        for (int i = 0; i < opt.runs; ++i) {
          CompletionRequest req;
          req.model = opt.model;
          req.prompt = pr.prompt;
          req.chat = opt.chat;
          req.stream = mode == "stream";
          req.max_tokens = opt.max_tokens;
          req.temperature = smp.temperature;
          req.seed = smp.seed;
          req.logprobs = logprobs;
          req.top_logprobs = std::max(opt.top_logprobs, 0);
          RunRecord run;
          run.mode = mode;
          run.index = i;
          auto send = [&] {
            if (mode != "loaded") return client.complete(req);
            const size_t base = filler_base;
            filler_base += size_t(opt.concurrency);
            return loaded_run(client, req, opt.concurrency, base, opt.timeout_s, rep);
          };
          try {
            try {
              run.out = send();
            } catch (const ProbeError& e) {
              // A server that refuses logprobs: say so and compare the texts.
              const std::string m = e.what();
              if (rep.requests > 0 || !logprobs || (e.http_status != 400 && e.http_status != 422) ||
                  m.find("logprob") == std::string::npos)
                throw;
              logprobs = false;
              rep.logprobs_refused = m;
              req.logprobs = false;
              run.out = send();
            }
            ++answered;
          } catch (const ProbeError& e) {
            // No answer at all, or a configuration error before any answer: the probe ends.
            const bool client_error = e.http_status >= 400 && e.http_status < 500 &&
                                      e.http_status != 408 && e.http_status != 429;
            if (!e.answer_error || (answered == 0 && client_error)) throw;
            run.error = request_error(e, rep.endpoint);
          }
          ++rep.requests;
          rep.retries += run.out.retries;
          if (progress) {
            std::string what = "prompt " + std::to_string(p + 1) + " " + smp.name + " " + mode +
                               " run " + std::to_string(i + 1);
            if (run.error) what += ": failed, recorded: " + describe_error(*run.error);
            progress(++done, total, what);
          }
          s.runs.push_back(std::move(run));
        }
      pr.series.push_back(std::move(s));
    }
    rep.prompts.push_back(std::move(pr));
  }
  analyze(rep);
  if (!rep.logprobs_refused.empty()) rep.logprobs = false;
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace tzero::probe
