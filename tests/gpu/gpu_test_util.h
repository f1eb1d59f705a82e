// Helpers of the GPU tests (built only with -DTZERO_CUDA=ON): skipping without a device, device
// buffers, and bit comparisons (never a tolerance: the portable kernels must give the CPU's
// bits).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_kernels.h"

namespace tzero::test {

// Skips the test, visibly, where there is no usable CUDA device (cudaGetDeviceCount fails or
// returns 0): these tests prove GPU bits and cannot run without one.
#define TZ_REQUIRE_GPU()                  \
  if (::tzero::cuda::device_count() == 0) \
  GTEST_SKIP() << "no CUDA device present: GPU test skipped (run bench/cuda_check.sh on a GPU)"

// A device copy of a host vector (or an empty buffer of n elements).
template <typename T>
class Dev {
 public:
  explicit Dev(size_t n) : n_(n), p_(cuda::dev_alloc(n * sizeof(T))) {}
  explicit Dev(const std::vector<T>& v) : Dev(v.size()) {
    cuda::to_device(p_, v.data(), v.size() * sizeof(T));
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cuda::dev_free(p_); }
  T* get() const { return static_cast<T*>(p_); }
  std::vector<T> host() const {
    std::vector<T> v(n_);
    cuda::sync();
    cuda::to_host(v.data(), p_, n_ * sizeof(T));
    return v;
  }

 private:
  size_t n_;
  void* p_;
};

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Expects the same bits in every element; reports the first difference.
inline void expect_same_bits(const std::vector<float>& cpu, const std::vector<float>& gpu,
                             const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (bits_of(cpu[i]) != bits_of(gpu[i])) {
      ADD_FAILURE() << what << ": element " << i << " CPU " << cpu[i] << " (0x" << std::hex
                    << bits_of(cpu[i]) << ") GPU " << gpu[i] << " (0x" << bits_of(gpu[i])
                    << std::dec << ")";
      return;
    }
}

}  // namespace tzero::test
