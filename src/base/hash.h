// XXH3-128 digests, printed as 32 lowercase hex digits (high 64 bits first), and an
// incremental hasher for digests over many buffers (the logits of every step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tzero {

std::string xxh128_hex(const void* data, size_t size);

class Hasher128 {
 public:
  Hasher128();
  ~Hasher128();
  Hasher128(const Hasher128&) = delete;
  Hasher128& operator=(const Hasher128&) = delete;
  void update(const void* data, size_t size);
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tzero
