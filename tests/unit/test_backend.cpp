// The CUDA-independent parts of the device backend (backend/backend.h).
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "base/error.h"
#include "runtime/session.h"

namespace tzero {
namespace {

// --gpu-layers: parsed at the edge (runtime/session.h), resolved against the model's layers.
int parse_gpu_layers(const std::string& text, int n_layer) {
  return resolve_gpu_layers(parse_gpu_layers_arg(text), n_layer);
}

TEST(Backend, ParseGpuLayers) {
  EXPECT_EQ(parse_gpu_layers("all", 22), 22);
  EXPECT_EQ(parse_gpu_layers("0", 22), 0);
  EXPECT_EQ(parse_gpu_layers("7", 22), 7);
  EXPECT_EQ(parse_gpu_layers("22", 22), 22);
  EXPECT_EQ(parse_gpu_layers("23", 22), 22);  // more than the model has: all (llama.cpp's -ngl 99)
  EXPECT_EQ(parse_gpu_layers("99", 22), 22);
  for (const char* bad : {"-1", "", "x", "3x", "ALL", " 3", "+3"})
    EXPECT_THROW(parse_gpu_layers(bad, 22), Error) << bad;
}

TEST(Backend, GpuModePairs) {
  EXPECT_NO_THROW(check_gpu_mode(0, Mode::deterministic));
  EXPECT_NO_THROW(check_gpu_mode(0, Mode::fast));
  EXPECT_THROW(check_gpu_mode(0, Mode::portable), Error);
  EXPECT_THROW(check_gpu_mode(1, Mode::deterministic), Error);
  EXPECT_THROW(check_gpu_mode(1, Mode::fast), Error);
  if (cuda_built()) {
    EXPECT_NO_THROW(check_gpu_mode(3, Mode::portable));
  } else {
    EXPECT_THROW(check_gpu_mode(3, Mode::portable), Error);
  }
}

TEST(Backend, DeviceDescription) {
  DeviceInfo none;
  none.why_not = "not built with CUDA";
  EXPECT_EQ(describe_device(none), "none (not built with CUDA)");
  DeviceInfo h;
  h.usable = true, h.name = "NVIDIA H200", h.cc_major = 9, h.cc_minor = 0;
  h.memory_bytes = size_t(140) << 30;
  EXPECT_EQ(describe_device(h), "NVIDIA H200 (sm_90, 140.0 GiB)");
  if (!cuda_built()) {
    EXPECT_FALSE(cuda_device_info().usable);
    EXPECT_EQ(cuda_device_info().why_not, "not built with CUDA");
  }
}

}  // namespace
}  // namespace tzero
