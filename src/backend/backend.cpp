// The parts of the device backend that do not depend on CUDA (backend/backend.h).
#include "backend/backend.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"

namespace tzero {

void check_gpu_mode(int gpu_layers, Mode mode) {
  if (gpu_layers >= 1 && !cuda_built())
    throw Error("--gpu-layers: not built with CUDA: rebuild with -DTZERO_CUDA=ON (make cuda)");
  if (mode == Mode::portable)
    check(gpu_layers >= 1, "--mode portable is the GPU mode: it needs --gpu-layers N (N >= 1)");
  else if (gpu_layers >= 1)
    check(false,
          "--gpu-layers needs --mode portable (the only GPU mode implemented: the CPU's "
          "canonical orders, the CPU's bits), not --mode " +
              std::string(to_string(mode)));
}

std::string describe_device(const DeviceInfo& d) {
  if (!d.usable) return "none (" + d.why_not + ")";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB)", d.name.c_str(), d.cc_major, d.cc_minor,
                double(d.memory_bytes) / double(1ull << 30));
  return buf;
}

}  // namespace tzero
