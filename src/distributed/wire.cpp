// The ring's message writer (distributed/wire.h).
#include "distributed/wire.h"

namespace tzero::dist {

void WireWriter::append(const void* p, size_t n) {
  if (n == 0) return;
  const size_t at = bytes_.size();
  bytes_.resize(at + n);
  std::memcpy(bytes_.data() + at, p, n);
}

}  // namespace tzero::dist
