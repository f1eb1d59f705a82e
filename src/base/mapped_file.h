// A whole file, read-only in memory: memory-mapped (the default: pages load on first use and
// are shared with the page cache), or read into memory once (`--no-mmap`). A mapped file that
// another process truncates or rewrites in place while it is mapped can kill the process with
// SIGBUS on the next read of a lost page (or show the new bytes): replace model files by
// renaming a new file over the old one, or load with Load::Read. Throws tzero::Error naming the
// file on failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tzero {

class MappedFile {
 public:
  enum class Load {
    Map,   // mmap(2)
    Read,  // read(2) into a 64-byte aligned buffer owned by this object
  };
  explicit MappedFile(const std::string& path, Load load = Load::Map);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // else data_ is an aligned heap buffer
};

}  // namespace tzero
