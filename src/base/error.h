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

// Throws tzero::Error(message) when the condition is false. For input validation, not for
// internal invariants (use assert for those).
inline void check(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

}  // namespace tzero
