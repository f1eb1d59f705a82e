#include "base/huge_pages.h"

#include <sys/mman.h>

#include <utility>

namespace tzero {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}  // namespace

HugePageBuffer::HugePageBuffer(size_t n, bool sparse) {
  if (n == 0) return;
  const size_t map_size = n + kHugePage;
  void* m = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (sparse ? MAP_NORESERVE : 0), -1, 0);
  if (m == MAP_FAILED) return;
  map_ = m;
  map_size_ = map_size;
  data_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m) + kHugePage - 1) / kHugePage *
                                     kHugePage);
  size_ = n;
  ::madvise(data_, n, MADV_HUGEPAGE);  // EINVAL where THP is off: 4 KiB pages then
}

HugePageBuffer::~HugePageBuffer() {
  release();
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept {
  *this = std::move(other);
}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(map_, other.map_);
    std::swap(map_size_, other.map_size_);
  }
  return *this;
}

void HugePageBuffer::release() {
  if (map_) ::munmap(map_, map_size_);
  data_ = nullptr;
  size_ = 0;
  map_ = nullptr;
  map_size_ = 0;
}

}  // namespace tzero
