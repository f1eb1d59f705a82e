#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace tzero {

namespace {

// The start of a small file as a NUL-terminated string in buf (empty when it cannot be read).
void read_start(const char* path, char* buf, size_t cap) {
  buf[0] = '\0';
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = ::read(fd, buf, cap - 1);
  ::close(fd);
  buf[n > 0 ? n : 0] = '\0';
}

// The first number of a small file (0 when absent or not a number: "max").
size_t read_number(const char* path) {
  char buf[64];
  read_start(path, buf, sizeof buf);
  return size_t(std::strtoull(buf, nullptr, 10));
}

// The memory this process may still take: MemAvailable of /proc/meminfo, or less where its
// cgroup (a container's memory limit, v2 or v1) leaves less. 0 when /proc/meminfo cannot be
// read (the file is then mapped).
size_t mem_available() {
  char buf[4096];  // MemAvailable is the third line
  read_start("/proc/meminfo", buf, sizeof buf);
  const char* p = std::strstr(buf, "MemAvailable:");
  if (!p) return 0;
  size_t avail = size_t(std::strtoull(p + 13, nullptr, 10)) * 1024;
  const struct {
    const char *limit, *usage;
  } cgroups[] = {{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                 {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                  "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (const auto& c : cgroups) {
    const size_t limit = read_number(c.limit), usage = read_number(c.usage);
    if (limit > 0 && limit < (size_t(1) << 60))
      avail = std::min(avail, limit > usage ? limit - usage : 0);
  }
  return avail;
}

}  // namespace

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
  if (load == Load::Auto) {
    const char* env = std::getenv("TZ_MMAP");
    const bool force_map = env && *env && std::strcmp(env, "0") != 0;
    load = !force_map && size_ <= mem_available() / 2 ? Load::Read : Load::Map;
  }
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
    buffer_ = HugePageBuffer(size_);
    if (!buffer_) {
      ::close(fd);
      throw Error(path + ": cannot read into memory: " + std::to_string(size_) +
                  " bytes do not fit");
    }
    uint8_t* buf = buffer_.data();
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::read(fd, buf + done, size_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : 0;
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
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);  // buffer_ frees itself
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  if (!mapped_ || n == 0) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page;
  const uintptr_t end = (uintptr_t(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace tzero
