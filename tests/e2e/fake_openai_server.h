// A small OpenAI-compatible server for the probe's tests, in the test process (httplib::Server on
// 127.0.0.1, a free port). It answers /v1/completions and /v1/chat/completions, streamed (SSE)
// and not, with tokens and logprobs that depend only on the prompt, the temperature and the
// seed; switches make it deliberately nondeterministic:
//   perturb_every     every N-th request for the same (prompt, temperature) perturbs the logprob
//                     of token `position` by one ulp (the same perturbation each time);
//   token_under_load  a request that arrives while other requests are in flight gets a different
//                     token (and logprob) at `position`.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace tzero::test {

struct FakeServerOptions {
  bool logprobs = true;   // false: never report logprobs (a text-only server)
  int perturb_every = 0;  // 0: off
  bool token_under_load = false;
  int position = 3;        // the token the switches change
  int max_tokens = 8;      // at most this many tokens per answer
  int fail_429_first = 0;  // answer the first N requests 429 (Retry-After: 0)
  int delay_ms = 0;        // wait before answering a non-streamed request
  int token_delay_ms = 2;  // between streamed tokens
  std::string only_model;  // when set, other model names get a 404 error
  std::string fingerprint = "fp_fake";
};

class FakeOpenAIServer {
 public:
  explicit FakeOpenAIServer(FakeServerOptions o);
  ~FakeOpenAIServer();
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  FakeServerOptions o_;
  std::unique_ptr<httplib::Server> svr_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0}, in_flight_{0};
  std::mutex mu_;
  std::map<std::string, int> seen_;  // (prompt, temperature) -> requests so far
};

}  // namespace tzero::test
