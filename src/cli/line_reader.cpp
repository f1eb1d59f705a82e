// Interruptible line input (cli/line_reader.h).
#include "cli/line_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "cli/interrupt.h"

namespace tzero::cli {

bool LineReader::take_line(std::string& line) {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return false;
  line.assign(buffer_, 0, nl);
  buffer_.erase(0, nl + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

LineReader::Status LineReader::next(std::string& line) {
  while (true) {
    if (take_line(line)) return Status::line;
    if (eof_) {
      if (buffer_.empty()) return Status::eof;
      line.swap(buffer_);
      buffer_.clear();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return Status::line;
    }
    pollfd fds[2] = {{fd_, POLLIN, 0}, {interrupt::fd(), POLLIN, 0}};
    const nfds_t n = interrupt::fd() >= 0 ? 2 : 1;
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("cannot read the input: ") + std::strerror(errno));
    }
    if (n == 2 && (fds[1].revents & POLLIN)) return Status::interrupted;
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char chunk[4096];
    const ssize_t got = read(fd_, chunk, sizeof chunk);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(std::string("cannot read the input: ") + std::strerror(errno));
    }
    if (got == 0)
      eof_ = true;
    else
      buffer_.append(chunk, size_t(got));
  }
}

}  // namespace tzero::cli
