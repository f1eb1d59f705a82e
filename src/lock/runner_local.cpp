// make_local_runner: a lock's requests through tzero::Engine, a window of them in flight at once
// (the engine's results do not depend on what runs beside a request: batch invariance).
#include <deque>
#include <map>

#include "base/error.h"
#include "kernels/kernel_set.h"
#include "lock/environment.h"
#include "lock/runner.h"
#include "model/weights.h"
#include "ops/registry.h"
#include "runtime/fingerprint.h"
#include "tzero/engine.h"

namespace tzero::lock {

namespace {

// The text as a JSON response carries it: bytes that are not UTF-8 (a byte-fallback token of a
// random model) replaced by U+FFFD, as `tzero serve` writes them (server/api_error.h dump_json).
std::string as_json_text(const std::string& text) {
  return nlohmann::json::parse(
             nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

tzero::EngineOptions engine_options(const EngineConfig& c) {
  tzero::EngineOptions o;
  o.model_path = c.model;
  o.n_ctx = c.ctx;
  o.kernels = c.kernels;
  const std::optional<Mode> m = parse_mode(c.mode);
  if (!m || *m == Mode::portable)
    throw Error("--mode must be deterministic or fast, not '" + c.mode + "'");
  o.mode = *m;
  o.kv_type = c.kv_type;
  o.n_threads = c.threads;
  o.use_mmap = c.use_mmap;
  o.max_seqs = 8;
  return o;
}

class LocalRunner : public Runner {
 public:
  explicit LocalRunner(const EngineConfig& c) : config_(c), engine_(engine_options(c)) {
    const Fingerprint fp = engine_fingerprint(c, engine_);
    fingerprint_ = fp.hash;
    manifest_ = fp.manifest;
    environment_ = environment_json(select_kernels(c.kernels).name);
  }

  std::string kind() const override { return "local"; }
  std::string fingerprint() const override { return fingerprint_; }
  nlohmann::json manifest() const override { return manifest_; }
  nlohmann::json environment() const override { return environment_; }
  int n_ctx() const override { return engine_.info().n_ctx; }
  std::optional<tzero::RequestParams> resolved(const LockRequest& q) const override {
    return engine_request(q, engine_, config_.chat_template);
  }

  void run(const std::vector<LockRequest>& requests, const std::vector<size_t>& order,
           const ResultFn& done, const std::atomic<bool>& stop) override {
    struct InFlight {
      size_t index;
      ResultCollector collected;
    };
    std::map<uint64_t, InFlight> flying;
    std::deque<size_t> todo(order.begin(), order.end());
    const size_t window = size_t(engine_.options().max_seqs) * 2;
    std::vector<uint64_t> finished_ids;
    while (!todo.empty() || !flying.empty()) {
      while (!todo.empty() && flying.size() < window && !stop) {
        const size_t i = todo.front();
        todo.pop_front();
        uint64_t id = 0;
        try {
          id = engine_.submit(engine_request(requests[i], engine_, config_.chat_template),
                              [&flying, &finished_ids](const TokenEvent& e) {
                                InFlight& f = flying.at(e.request);
                                f.collected.on_event(e);
                                if (e.finished) finished_ids.push_back(e.request);
                              });
        } catch (const RequestError& e) {
          cancel_all(flying);
          throw Error(requests[i].where + ": " + (e.param.empty() ? "" : e.param + ": ") +
                      e.what());
        } catch (const Error&) {
          cancel_all(flying);
          throw;
        }
        flying.emplace(id, InFlight{i, {}});
      }
      if (stop) {
        cancel_all(flying);
        return;
      }
      engine_.step();
      for (const uint64_t id : finished_ids) {
        auto it = flying.find(id);
        const InFlight f = std::move(it->second);
        flying.erase(it);
        done(f.index, f.collected.result);
      }
      finished_ids.clear();
    }
  }

 private:
  template <class M>
  void cancel_all(M& flying) {
    for (auto& [id, f] : flying) engine_.cancel(id);
    while (engine_.step()) {
    }
    flying.clear();
  }

  EngineConfig config_;
  tzero::Engine engine_;
  std::string fingerprint_;
  nlohmann::json manifest_, environment_;
};

}  // namespace

tzero::RequestParams engine_request(const LockRequest& q, const tzero::Engine& engine,
                                    const std::string& chat_template) {
  server::OpenAiRequest r = q.parsed;
  try {
    server::resolve_prompt(r, engine, chat_template);
  } catch (const server::ApiError& e) {
    throw Error(q.where + ": " + (e.param.empty() ? "" : e.param + ": ") + e.what());
  }
  r.params.sampling.seed = r.seed.value_or(0);
  return r.params;
}

void ResultCollector::on_event(const tzero::TokenEvent& e) {
  result.text += e.text;
  if (e.finished) {
    result.text = as_json_text(result.text);
    result.finish_reason = to_string(e.finish_reason);
    result.stop_reason = to_string(e.stop_reason);
    result.logits_digest = e.logits_digest;
    result.n_prompt = e.n_prompt;
    result.tokens = tokens_;
    finished = true;
  } else if (!e.prompt && e.token >= 0) {
    tokens_.push_back(e.token);
  }
}

Fingerprint engine_fingerprint(const EngineConfig& c, const tzero::Engine& engine) {
  const auto model = Model::load(c.model, MappedFile::Load::Map);  // the fingerprint only
  const std::string variant = with_overrides(select_kernels(c.kernels), c.op_overrides).name;
  const std::optional<Mode> mode = parse_mode(c.mode);
  check(mode.has_value(), "--mode must be deterministic or fast, not '" + c.mode + "'");
  Fingerprint fp =
      compute_fingerprint(*model, *mode, variant, c.op_overrides, c.kv_type, engine.info().n_ctx);
  check(fp.hash == engine.info().fingerprint,
        "internal: the engine's fingerprint differs from the manifest's");
  return fp;
}

std::unique_ptr<Runner> make_local_runner(const EngineConfig& config) {
  return std::make_unique<LocalRunner>(config);
}

}  // namespace tzero::lock
