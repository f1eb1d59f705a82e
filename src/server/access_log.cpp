// The access log (server/access_log.h).
#include "server/access_log.h"

#include <algorithm>

namespace tzero::server {

namespace {

constexpr size_t kMaxQueued = 4096;
constexpr size_t kMaxPath = 200;

// Printable ASCII as is, anything else as \xNN (and the backslash too, so the line reads back
// unambiguously); at most `max` bytes of the input, then "...".
std::string escaped(const std::string& s, size_t max) {
  std::string out;
  const size_t n = std::min(s.size(), max);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (s.size() > max) out += "...";
  return out.empty() ? "-" : out;
}

}  // namespace

std::string access_log_line(const std::string& method, const std::string& path, int status,
                            const std::optional<LoggedTokens>& tokens, int64_t ms,
                            const std::string& note) {
  std::string line =
      escaped(method, 16) + " " + escaped(path, kMaxPath) + " " + std::to_string(status);
  if (tokens)
    line += " prompt=" + std::to_string(tokens->prompt) +
            " completion=" + std::to_string(tokens->completion);
  if (ms >= 0) line += " " + std::to_string(ms) + "ms";
  if (!note.empty()) line += " " + note;
  return line;
}

AccessLog::AccessLog(bool enabled, std::FILE* out) : enabled_(enabled), out_(out) {
  if (enabled_) writer_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void AccessLog::write(std::string line) {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lines_.size() >= kMaxQueued) {
      ++dropped_;
      return;
    }
    lines_.push_back(std::move(line));
  }
  cv_.notify_one();
}

int64_t AccessLog::ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

void AccessLog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !lines_.empty(); });
    if (lines_.empty() && dropped_ == 0) return;  // stopping, everything written
    std::deque<std::string> batch;
    batch.swap(lines_);
    const uint64_t dropped = dropped_;
    dropped_ = 0;
    lock.unlock();
    std::string text;
    if (dropped > 0) text += "access log: " + std::to_string(dropped) + " lines dropped\n";
    for (const std::string& l : batch) text += l + "\n";
    std::fwrite(text.data(), 1, text.size(), out_);
    std::fflush(out_);
    lock.lock();
  }
}

}  // namespace tzero::server
