// The server's access log: one line per HTTP exchange on stderr (docs/SERVER.md, "Access
// log"), written when the answer is complete (a stream when it ends):
//   POST /v1/chat/completions 200 prompt=12 completion=30 431ms
//   GET /health 200 0ms
//   POST /v1/completions 200 prompt=5 completion=3 88ms disconnected
//   - /v1/completions 413 refused
// Tokens appear for generation requests (the prompt once, the completion summed over the
// choices). Control bytes and bytes >= 0x7f in the method or path are written as \xNN (a path
// is percent-decoded: it could otherwise hold a newline and forge a line) and a path is cut at
// 200 bytes.
//
// Lines are queued and written by a thread of the log's own, so a stderr that blocks (a pipe
// nobody reads) never stalls a request; beyond 4096 waiting lines new ones are dropped and
// counted, and the next written line is preceded by "access log: N lines dropped".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace tzero::server {

struct LoggedTokens {
  int prompt = 0, completion = 0;
};

// The line without its newline. ms < 0: no duration (a refusal); note: appended when not empty.
std::string access_log_line(const std::string& method, const std::string& path, int status,
                            const std::optional<LoggedTokens>& tokens, int64_t ms,
                            const std::string& note = "");

class AccessLog {
 public:
  // enabled false: write() does nothing and no thread is started. `out`: stderr unless a test
  // gives another stream.
  explicit AccessLog(bool enabled, std::FILE* out = stderr);
  ~AccessLog();  // writes what is queued, then joins
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return enabled_; }
  // Queues one line (any thread; never blocks on the output).
  void write(std::string line);
  // Milliseconds since `start` (steady clock), for the line.
  static int64_t ms_since(std::chrono::steady_clock::time_point start);

 private:
  void run();

  const bool enabled_;
  std::FILE* const out_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  uint64_t dropped_ = 0;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace tzero::server
