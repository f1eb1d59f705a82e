// The messages that travel a pipeline's ring (distributed/pipeline.h): plain bytes, written
// and read in the same order by the same build on every rank (the open message checks the
// version). Little-endian hosts only (x86-64, aarch64): values are copied as they lie in memory.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"

namespace tzero::dist {

enum class MsgKind : uint32_t {
  open_model = 1,  // load a model's layers of this rank
  close_model,
  open_forward,  // a forward pass over a model (n_ctx, n_batch)
  close_forward,
  open_store,  // a KV store's mirror, made before its first pass (a large pool takes a while)
  pass,        // a batch: its tables, and the residual stream to run through this rank's layers
  stop,        // the job ends: every rank finalizes
  error,       // a rank failed the message: the ranks after it pass this on to rank 0
};

class WireWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  template <class T>
  void put_array(const T* p, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(uint64_t(n));
    append(p, n * sizeof(T));
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    put_array(v.data(), v.size());
  }
  void put_string(const std::string& s) { put_array(s.data(), s.size()); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  // Out of line (wire.cpp): inlined, GCC 12 at -O3 reports false array-bounds and
  // stringop-overflow errors on the growing vector.
  void append(const void* p, size_t n);
  std::vector<uint8_t> bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::vector<uint8_t>& bytes) : p_(bytes.data()), n_(bytes.size()) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> get_vector() {
    const uint64_t n = get<uint64_t>();
    check(n <= (n_ - at_) / sizeof(T), "internal: a pipeline message cut short");
    std::vector<T> v(static_cast<size_t>(n));
    if (n) std::memcpy(v.data(), take(size_t(n) * sizeof(T)), size_t(n) * sizeof(T));
    return v;
  }
  std::string get_string() {
    const std::vector<char> c = get_vector<char>();
    return std::string(c.begin(), c.end());
  }
  // Where the next value starts (a later writer copies the message up to a point).
  size_t offset() const { return at_; }

 private:
  const uint8_t* take(size_t k) {
    check(k <= n_ - at_, "internal: a pipeline message cut short");
    const uint8_t* q = p_ + at_;
    at_ += k;
    return q;
  }
  const uint8_t* p_;
  size_t n_, at_ = 0;
};

}  // namespace tzero::dist
