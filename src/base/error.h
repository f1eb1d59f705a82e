// Errors that reach the user. Every failure caused by input (a damaged file, an unsupported
// model, a bad flag) is an tzero::Error with a one-line message; the CLI prints it and exits 2.
#pragma once

#include <stdexcept>
#include <string>

namespace tzero {

class Error : public std::runtime_error {
 public:
  // A NUL byte in the message (a path or name from untrusted input) is written as \x00, so
  // what() keeps the whole line instead of ending there.
  explicit Error(const std::string& message) : std::runtime_error(without_nul(message)) {}

 private:
  static std::string without_nul(const std::string& m) {
    if (m.find('\0') == std::string::npos) return m;
    std::string out;
    for (const char c : m) c == '\0' ? out += "\\x00" : out += c;
    return out;
  }
};

// Throws tzero::Error(message) when the condition is false. Used for input validation and,
// with an "internal: " message, for the internal invariants worth checking in release builds
// (there are no assert()s: they would vanish under NDEBUG). The CLI prints either as one line
// and exits 2.
// Layout facts are static_asserts.
inline void check(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

}  // namespace tzero
