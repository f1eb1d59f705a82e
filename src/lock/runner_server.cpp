// make_server_runner: a lock's requests against an OpenAI-compatible server, one at a time,
// through the probe's client (429 retried, deadlines held, errors in one line).
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "lock/environment.h"
#include "lock/runner.h"
#include "probe/client.h"

namespace tzero::lock {

LockResult result_of_completion(const std::string& text, const std::string& finish_reason,
                                const std::string& tzero_extension,
                                const std::vector<std::string>* logprobs) {
  LockResult r;
  r.text = text;
  r.finish_reason = finish_reason;
  if (logprobs) r.logprobs = *logprobs;
  if (tzero_extension.empty()) return r;
  const nlohmann::json ext = parse_json_bounded_or_discarded(tzero_extension);
  if (!ext.is_object()) return r;
  if (auto it = ext.find("logits_digest"); it != ext.end() && it->is_string())
    r.logits_digest = it->get<std::string>();
  if (auto it = ext.find("stop_reason"); it != ext.end() && it->is_string())
    r.stop_reason = it->get<std::string>();
  // Token ids, when the server sends them in its "tzero" field.
  for (const char* key : {"tokens", "token_ids"})
    if (auto it = ext.find(key); it != ext.end() && it->is_array()) {
      std::vector<int32_t> t;
      bool ok = true;
      for (const auto& v : *it) {
        ok = ok && v.is_number_integer();
        if (ok) t.push_back(v.get<int32_t>());
      }
      if (ok) r.tokens = std::move(t);
    }
  return r;
}

namespace {

class ServerRunner : public Runner {
 public:
  explicit ServerRunner(const ServerConfig& c)
      : config_(c), client_(c.base_url, c.api_key, c.timeout_s) {}

  std::string kind() const override { return "server"; }
  std::string fingerprint() const override { return fingerprint_; }
  nlohmann::json manifest() const override {
    return nlohmann::json{{"server", client_.url()}, {"system_fingerprint", fingerprint_}};
  }
  nlohmann::json environment() const override {
    nlohmann::json e = environment_json("");
    e["note"] = "the client's machine; the server's is not known";
    return e;
  }

  std::optional<tzero::RequestParams> resolved(const LockRequest&) const override {
    return std::nullopt;
  }
  int n_ctx() const override { return 0; }

  void run(const std::vector<LockRequest>& requests, const std::vector<size_t>& order,
           const ResultFn& done, const std::atomic<bool>& stop) override {
    for (const size_t i : order) {
      if (stop) return;
      const LockRequest& q = requests[i];
      nlohmann::ordered_json body = parse_json_bounded<nlohmann::ordered_json>(q.body);
      if (!body.contains("model") && !config_.model_name.empty())
        body["model"] = config_.model_name;
      probe::CompletionRequest r;
      r.chat = q.endpoint == server::Endpoint::chat;
      r.stream = q.parsed.stream;
      r.raw_body = body.dump();
      probe::Completion c;
      try {
        c = client_.complete(r, &stop);
      } catch (const Error& e) {
        throw Error(q.where + " (" + excerpt(q.id) + "): " + e.what());
      }
      if (stop) return;  // the answer may be partial
      if (fingerprint_.empty()) fingerprint_ = c.system_fingerprint;
      std::vector<std::string> lp;
      for (const auto& t : c.tokens) lp.push_back(t.logprob.text);
      done(i, result_of_completion(c.text, c.finish_reason, c.tzero_extension,
                                   c.has_logprobs ? &lp : nullptr));
    }
  }

 private:
  ServerConfig config_;
  probe::Client client_;
  std::string fingerprint_;
};

}  // namespace

std::unique_ptr<Runner> make_server_runner(const ServerConfig& config) {
  return std::make_unique<ServerRunner>(config);
}

}  // namespace tzero::lock
