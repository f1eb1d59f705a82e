// The server's HTTP/1.x transport (docs/SERVER.md, "Limits and threat model"): Boost.Beast's
// request parser over Boost.Asio, one event-loop thread for every connection, request handlers
// on a small pool. It is the part that faces the network, so everything a client can make it
// hold is bounded:
//   - connections: at most max_connections; one more is answered 503 and closed at once;
//   - a request: its header section (bytes and field count) and its body (413 beyond, also
//     before `100 Continue`), all received within request_timeout_s of the accept (on a kept-alive
//     connection: of its first byte),
//     however the bytes drip (an absolute deadline, never restarted);
//   - an idle connection: closed after keep_alive_s without a byte;
//   - a response: each write must finish within write_timeout_s, and at most
//     max_send_queue_bytes of a stream may wait to be written; a client that does not read is
//     cut. A whole response (respond()) is written whatever its size: the handler bounds it
//     (ServerOptions::max_response_bytes);
//   - a request with two Host fields is a 400 (duplicate_host), as RFC 9112 asks;
//   - stop(): closes the listener and every connection at once.
// Requests on one connection are answered in order (pipelining works); HTTP/1.0 clients get
// close-delimited streams instead of chunked ones; a client that half-closes after its request
// still gets the answer.
//
// The transport knows nothing of OpenAI: it hands each request to the handler (on a pool
// thread) with an Exchange to answer through, from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tzero::server {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 0;                            // 0: any free port
  int max_connections = 512;               // open connections; more are answered 503 and closed
  size_t max_header_bytes = 32u << 10;     // request line + header fields (431 beyond)
  size_t max_header_fields = 100;          // header fields (431 beyond)
  size_t max_body_bytes = 1u << 20;        // request body (413 beyond)
  double request_timeout_s = 10;           // a whole request, from accept / its first byte
  double keep_alive_s = 5;                 // a connection waiting for its next request
  double write_timeout_s = 30;             // one write to the client
  size_t max_send_queue_bytes = 4u << 20;  // stream bytes waiting to be written (cut beyond)
  int handler_threads = 2;                 // threads running the request handler
  int retry_after_s = 1;                   // Retry-After of the 503 beyond max_connections
  // Told of every answer the transport gives itself (400, 413, 415, 431, 503 beyond
  // max_connections) with the request's path ("" when it was not read); on the io thread.
  std::function<void(const std::string& path, int status)> on_refused;
};

struct HttpRequest {
  std::string method;
  std::string target;  // as sent
  std::string path;    // the target without its query, percent-decoded
  int version = 11;    // 10 or 11
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first field of this name (case-insensitive); "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after it
};

// One request's answer. Every method may be called from any thread; once the connection is
// gone they do nothing.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // The whole response (Content-Length framed), written whatever its size (the caller bounds
  // it). Once per request. `written` (optional) runs on
  // the connection's thread once it is written or the connection is gone.
  virtual void respond(HttpResponse r, std::function<void()> written = nullptr) = 0;
  // A streamed response instead: its status and headers (the body goes by send(); chunked for
  // HTTP/1.1, close-delimited for HTTP/1.0), ...
  virtual void begin_stream(HttpResponse head) = 0;
  // ... its bytes (queued; more than max_send_queue_bytes waiting cuts the client) ...
  virtual void send(std::string bytes) = 0;
  // ... and its end; `written` runs (on the connection's thread) once the last byte is written
  // or the connection is gone.
  virtual void end_stream(std::function<void()> written) = 0;
  // Runs f on the connection's thread (in order with the calls above); dropped when the
  // transport has stopped.
  virtual void post(std::function<void()> f) = 0;
  // Runs f on a handler thread (work too long for the connection's thread); dropped when the
  // transport has stopped.
  virtual void work(std::function<void()> f) = 0;
  // f runs once if the client goes away (write failure, cut, or stop()) before the response
  // is complete. Set it before begin_stream.
  virtual void on_gone(std::function<void()> f) = 0;
  // The request's HTTP version (10 or 11).
  virtual int version() const = 0;
};

using HttpHandler = std::function<void(HttpRequest&, std::shared_ptr<Exchange>)>;

class HttpTransport {
 public:
  HttpTransport(TransportOptions options, HttpHandler handler);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds (listen backlog SOMAXCONN), starts the threads, returns the port. Throws
  // tzero::Error when the address cannot be bound.
  int start();
  // Closes the listener and every connection, joins the threads. Idempotent.
  void stop();
  int open_connections() const;
  uint64_t rejected_connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tzero::server
