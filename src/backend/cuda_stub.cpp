// The device backend of a build without CUDA (-DTZERO_CUDA=OFF, the default): there is no
// device, and asking for one is an input error (exit 2) that says so.
#include "backend/backend.h"
#include "base/error.h"

namespace tzero {

namespace {
constexpr const char* kNotBuilt =
    "not built with CUDA: rebuild with -DTZERO_CUDA=ON (make cuda) to use --gpu-layers";
}

bool cuda_built() {
  return false;
}

DeviceInfo cuda_device_info() {
  DeviceInfo d;
  d.why_not = "not built with CUDA";
  return d;
}

std::unique_ptr<BackendOps> make_cuda_backend(const HParams&, const ActLayout&, int, int, int) {
  throw Error(kNotBuilt);
}

double measure_device_bandwidth(size_t, int) {
  throw Error(kNotBuilt);
}

}  // namespace tzero
