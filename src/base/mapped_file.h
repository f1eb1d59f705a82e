// A whole file, read-only in memory: read once into private memory backed by 2 MiB pages (the
// default when the file fits in half the memory available to the process: MemAvailable, or its
// cgroup's limit less its usage where that is less), or memory-mapped
// (pages load on first use and are shared with the page cache and with other processes that
// map it).
//
// Why the default reads: decode streams every weight once per token, and weights in the page
// cache (4 KiB pages scattered over physical memory) stream 20-30% slower than the same bytes in
// 2 MiB pages (docs/BENCHMARKS.md, "Decode against the memory bus"). The cost is the copy at
// load (about 0.4 s per GB from the page cache) and no sharing between processes. TZ_MMAP=1 in
// the environment maps instead (several servers of one model on one machine); Load::Read
// (--no-mmap) reads whatever TZ_MMAP says. Where the kernel's transparent huge pages are off
// (/sys/kernel/mm/transparent_hugepage/enabled "never") the copy gets 4 KiB pages: still
// measured 20% faster than the page cache here, without the further gain of 2 MiB pages.
//
// A mapped file that another process truncates or rewrites in place while it is mapped can kill
// the process with SIGBUS on the next read of a lost page (or show the new bytes): replace model
// files by renaming a new file over the old one, or load with Load::Read. Throws tzero::Error
// naming the file on failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/huge_pages.h"

namespace tzero {

class MappedFile {
 public:
  enum class Load {
    Map,   // mmap(2)
    Read,  // read(2) into a HugePageBuffer owned by this object (base/huge_pages.h)
    Auto,  // Read when the file is at most half of the available memory (MemAvailable, or the
           // cgroup's limit less its usage where less) and TZ_MMAP is unset, empty or "0";
           // else Map
  };
  explicit MappedFile(const std::string& path, Load load = Load::Map);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  bool mapped() const { return mapped_; }  // the file is mapped (else read into private memory)
  // A mapped file: the pages wholly inside [p, p + n) leave this process's resident memory (they
  // stay in the page cache, and a later read maps them again). Nothing when read into memory.
  // For bytes read once and kept elsewhere (GgufFile::own_tensors) or hashed (the fingerprint).
  void release(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // else data_ is in buffer_
  HugePageBuffer buffer_;
};

}  // namespace tzero
