// Lines from a file descriptor (stdin for `tzero chat`) that a Ctrl+C can interrupt: the reader
// waits on the input and on the interrupt pipe (cli/interrupt.h) together.
#pragma once

#include <string>

namespace tzero::cli {

class LineReader {
 public:
  enum class Status { line, eof, interrupted };

  explicit LineReader(int fd) : fd_(fd) {}

  // The next line, without its "\n" (nor a "\r" before it). At the end of the input a last line
  // without "\n" is still a line; then eof. interrupted: a SIGINT is pending (interrupt::fd()
  // readable) and no whole line was waiting; what was read of a line is kept for the next call.
  // Throws tzero::Error when the input cannot be read.
  Status next(std::string& line);

 private:
  bool take_line(std::string& line);

  int fd_;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace tzero::cli
