// A deliberately hostile HTTP server on 127.0.0.1 (raw sockets, a free port) for the probe's
// tests: it reads one request per connection and then misbehaves in one chosen way, bounded
// in time and bytes so that a test always ends. Stopped (every connection closed) at
// destruction.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tzero::test {

enum class Hostility {
  EndlessStream,      // a valid SSE stream whose token chunks never end
  KeepAliveForever,   // SSE headers, then only ": keep-alive" comments
  HeaderDrip,         // the status line and headers one byte every 50 ms, never finished
  HugeLine,           // SSE headers, then one "data: xxxx..." line that never ends
  EndlessBody,        // a JSON response whose body never ends (Content-Length: 10 GB)
  RetryAfterHuge,     // 429 with Retry-After: 1e308, every time
  CutStream,          // streamed: two token chunks, then the connection closes (no
                      // finish_reason, no [DONE]); not streamed: a proper answer
  DeepNesting,        // a 200 application/json body of kHostileBodyBytes `[` (Content-Length
                      // given, just under the client's 64 MiB cap)
  DeepNestingStream,  // SSE headers, then one data line of 1 MiB of `[` and a blank line
  WideBody,           // a 200 application/json body of kHostileBodyBytes: `["","",...]`
  EscapeInError,      // not streamed: a 500 whose text/plain body is kEscapes and 5,000 'x';
                      // streamed: a 200 stream whose one event is an error object with that
                      // message (JSON-escaped: \u001b)
};

// ~62 MB: what a server just under the probe's 64 MiB response cap can send.
constexpr size_t kHostileBodyBytes = 62'000'000;
// Clear the screen, set the terminal's title: what EscapeInError hides in its error message.
constexpr const char* kEscapes = "\x1b[2J\x1b]0;pwned\x07";

class HostileServer {
 public:
  explicit HostileServer(Hostility h);
  ~HostileServer();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }
  // Bytes sent in all (to check a client stopped reading).
  size_t bytes_sent() const { return sent_.load(); }

 private:
  void serve(int fd);
  Hostility h_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<size_t> sent_{0};
  std::thread acceptor_;
  std::vector<std::thread> conns_;
};

}  // namespace tzero::test
