// Memory for data a kernel streams through: an anonymous mapping whose start is 2 MiB aligned,
// with transparent huge pages asked for (MADV_HUGEPAGE), so every whole 2 MiB of it can be one
// page. Weights in 4 KiB pages (the page cache) streamed 20-30% slower on the machines measured
// (docs/BENCHMARKS.md, "Decode against the memory bus"). Where the kernel's transparent huge
// pages are off, the memory still works, in 4 KiB pages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tzero {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // n bytes, zero-filled on first touch; empty (false) when the mapping fails. sparse: only a
  // part will ever be touched (an expert parallelism rank's experts of a whole tensor), so the
  // mapping reserves no memory for the rest (MAP_NORESERVE: the kernel does not count it).
  explicit HugePageBuffer(size_t n, bool sparse = false);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  explicit operator bool() const { return data_ != nullptr; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();

  uint8_t* data_ = nullptr;  // 2 MiB aligned, inside the mapping
  size_t size_ = 0;
  void* map_ = nullptr;  // the mapping: size_ + 2 MiB bytes
  size_t map_size_ = 0;
};

}  // namespace tzero
