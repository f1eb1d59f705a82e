// Errors that reach the user. Every failure caused by input (a damaged file, an unsupported
// model, a bad flag) is an tzero::Error with a one-line message; the CLI prints it and exits 2.
#pragma once

#include <stdexcept>
#include <string>

namespace tzero {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
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
