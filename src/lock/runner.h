// Running a lock's requests: locally through the batched engine (tzero::Engine, with the engine
// flags `tzero serve` takes), or against an OpenAI-compatible server through the probe's client
// (probe/client.h). Both deliver one LockResult per request, as each finishes (progress), and
// both stop early when `stop` is set (SIGINT) or when a request fails: then the exception
// propagates after the results already delivered, so a caller keeps what finished.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lock/lock_file.h"
#include "lock/prompt_set.h"
#include "runtime/fingerprint.h"
#include "tzero/engine.h"

namespace tzero::lock {

// index into the requests, its result.
using ResultFn = std::function<void(size_t, const LockResult&)>;

class Runner {
 public:
  virtual ~Runner() = default;
  // Runs requests[i] for every i in `order` (their results come in any order). Throws
  // tzero::Error naming the request ("FILE:LINE: ...") for a request the engine or server refuses.
  virtual void run(const std::vector<LockRequest>& requests, const std::vector<size_t>& order,
                   const ResultFn& done, const std::atomic<bool>& stop) = 0;
  virtual std::string kind() const = 0;  // "local" or "server"
  virtual std::string fingerprint() const = 0;
  virtual nlohmann::json manifest() const = 0;
  virtual nlohmann::json environment() const = 0;
  // A local runner: the engine request a lock request resolves to (prompt tokens, max_tokens,
  // seed), for a traced rerun; a server runner: nullopt.
  virtual std::optional<tzero::RequestParams> resolved(const LockRequest& r) const = 0;
  virtual int n_ctx() const = 0;  // the context per sequence (0 for a server)
};

// Loads the model (tzero::Error for an unusable file or option).
std::unique_ptr<Runner> make_local_runner(const EngineConfig& config);

// A lock request as an engine takes it, the way `tzero lock` ran it: the prompt resolved (the
// chat template applied, "" for the model's own), a missing seed as 0. Throws tzero::Error
// "FILE:LINE: ..." for a request the engine refuses.
tzero::RequestParams engine_request(const LockRequest& q, const tzero::Engine& engine,
                                    const std::string& chat_template);

// One engine request's events gathered into the result a lock records.
struct ResultCollector {
  LockResult result;
  bool finished = false;
  void on_event(const tzero::TokenEvent& e);

 private:
  std::vector<int32_t> tokens_;
};

// The fingerprint and manifest of an engine run with these flags (runtime/fingerprint.h), as a
// lock records them; maps the model file to hash it.
Fingerprint engine_fingerprint(const EngineConfig& c, const tzero::Engine& engine);

struct ServerConfig {
  std::string base_url, api_key, model_name;  // model_name: "model" for lines without one
  double timeout_s = 300;
};
std::unique_ptr<Runner> make_server_runner(const ServerConfig& config);

// The result of a /v1 response as a lock records it (exposed for tests): the text and finish
// reason, the "tzero" field's logits digest, stop reason and (when a server sends them) token
// ids, the logprobs as the server wrote them.
LockResult result_of_completion(const std::string& text, const std::string& finish_reason,
                                const std::string& tzero_extension,
                                const std::vector<std::string>* logprobs);

}  // namespace tzero::lock
