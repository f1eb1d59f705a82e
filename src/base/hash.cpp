#include "base/hash.h"

#include <cstdio>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tzero {

static std::string to_hex(XXH128_hash_t h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64,
                (unsigned long long)h.low64);
  return buf;
}

std::string xxh128_hex(const void* data, size_t size) {
  return to_hex(XXH3_128bits(data, size));
}

struct Hasher128::State {
  XXH3_state_t xxh;
};

Hasher128::Hasher128() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh);
}
Hasher128::~Hasher128() = default;
void Hasher128::update(const void* data, size_t size) {
  XXH3_128bits_update(&state_->xxh, data, size);
}
std::string Hasher128::hex() const {
  return to_hex(XXH3_128bits_digest(&state_->xxh));
}

}  // namespace tzero
