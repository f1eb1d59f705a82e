// tzero's OpenAI-compatible HTTP server over one shared Engine (docs/SERVER.md):
//   POST /v1/completions, POST /v1/chat/completions (JSON or server-sent events),
//   GET /v1/models, GET /v1/models/{id}, GET /health, GET /metrics, and llama.cpp's
//   POST /tokenize and POST /detokenize; GET / (the console, server/console.h) and GET /canary
//   (the drift canary's last report).
// Every generation runs through the engine's background stepping thread, so every response is
// batch-invariant: bit for bit what the request would get alone.
//
//   tzero::Engine engine(opts);
//   tzero::server::HttpServer srv(engine, {});   // 127.0.0.1:8080
//   int port = srv.start();                   // binds, serves on background threads
//   ...
//   srv.stop(10.0);                           // graceful, see stop()
//
// Errors are OpenAI error objects (server/api_error.h): 400 bad input, 401 missing or wrong
// API key (every route but /health), 404 unknown route, 405 wrong method, 413 body too large
// or an answer over max_response_bytes, 429 queue full (Retry-After), 503 shutting down
// (Retry-After); the transport adds 400 (two Host fields), 403 (a Host not allowed without a key),
// 415 (not JSON, or compressed), 431 (headers too large) and 503 (too many connections).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/console.h"
#include "tzero/engine.h"

namespace tzero::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: a free port, chosen by the system
  std::string api_key;               // non-empty: requests need "Authorization: Bearer KEY"
  std::string chat_template;         // a named format or a file; "": the model's, else chatml
  std::string model_name;            // reported as `model`; "": the model's name
  size_t max_body_bytes = 1u << 20;  // larger request bodies get 413
  // A whole (non-streamed) answer larger than this is a 413 error object (response_too_large)
  // naming the limit; streams are not bounded in total. The default fits lm-evaluation-harness
  // scoring at 131072 positions with top-20 logprobs on a 256k vocabulary (docs/SERVER.md,
  // "Limits and threat model", has the arithmetic).
  size_t max_response_bytes = size_t(256) << 20;
  int http_threads = 2;   // threads running request handlers (not one per connection)
  int retry_after_s = 1;  // Retry-After of 429 and 503
  int keep_alive_s = 5;   // idle keep-alive connections close after this
  // The transport's limits (server/http_transport.h, docs/SERVER.md "Limits and threat model").
  int max_connections = 512;            // open connections; one more gets 503 and is closed
  size_t max_header_bytes = 32u << 10;  // request line + header fields; 431 beyond
  size_t max_header_fields = 100;       // header fields; 431 beyond
  double request_timeout_s = 10;  // a whole request (headers + body), from accept / its first byte
  double write_timeout_s = 30;    // one write to a client; a client not reading is cut
  // Without an api_key, the Host names accepted besides IP literals and "localhost" (a
  // DNS-rebinding defence; "*": any).
  std::vector<std::string> allowed_hosts;
  bool access_log = true;  // one line per exchange on stderr (server/access_log.h)
  // What /health and /metrics add (the drift canary, lock/canary.h, wired by cmd_serve):
  // health_extra adds fields to /health's object and returns false to report the server
  // degraded (status "degraded", 503); metrics_extra appends exposition lines.
  std::function<bool(nlohmann::json&)> health_extra;
  std::function<void(std::string&)> metrics_extra;
  // The console at GET / (server/console.h; model and fingerprint filled in by the server),
  // and the canary's last report at GET /canary (404 when not set).
  ConsoleInfo console;
  std::function<std::string()> canary_page;
};

class HttpServer {
 public:
  // The engine must outlive the server; start() calls engine.start().
  HttpServer(tzero::Engine& engine, ServerOptions options);
  ~HttpServer();  // stop(0)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and serves on background threads; returns the port. Throws tzero::Error when the
  // address cannot be bound.
  int start();
  int port() const;

  // Graceful stop: from now on generation requests get 503 and /health says
  // "shutting_down"; waits up to grace_s seconds for the requests in flight to finish, then
  // cancels the rest (a stream then ends with an error event, a non-streaming request gets
  // 503), closes the listener and joins. Idempotent. The engine keeps running (its owner
  // stops it).
  void stop(double grace_s);
  // Cancels every request in flight now (e.g. on a second signal); stop() still needed.
  void cancel_all();
  int in_flight() const;

  // The name the server reports for its model.
  const std::string& model_name() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzero::server
