// Small deterministic random generators: the same seed gives the same stream on every machine.
#pragma once

#include <cstdint>

namespace tzero {

// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state, a full-period stream.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits: exact in float.
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

}  // namespace tzero
