#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "base/error.h"

namespace tzero {

MappedFile::MappedFile(const std::string& path, Load load) : path_(path) {
  // open(2) would stop at a NUL and open another file than the one named.
  if (path.find('\0') != std::string::npos) throw Error(path + ": the path contains a NUL byte");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0 && load == Load::Map) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(path + ": cannot mmap: " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
    mapped_ = true;
  } else if (size_ > 0) {
    auto* buf = static_cast<uint8_t*>(::operator new(size_, std::align_val_t(64), std::nothrow));
    if (!buf) {
      ::close(fd);
      throw Error(path + ": cannot read into memory: " + std::to_string(size_) +
                  " bytes do not fit");
    }
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::read(fd, buf + done, size_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : 0;
        ::operator delete(buf, std::align_val_t(64));
        ::close(fd);
        throw Error(path + ": read failed after " + std::to_string(done) + " of " +
                    std::to_string(size_) + " bytes" +
                    (e ? std::string(": ") + std::strerror(e) : " (the file shrank)"));
      }
      done += size_t(n);
    }
    data_ = buf;
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (!data_) return;
  if (mapped_)
    ::munmap(const_cast<uint8_t*>(data_), size_);
  else
    ::operator delete(const_cast<uint8_t*>(data_), std::align_val_t(64));
}

}  // namespace tzero
