// The device backend: which accelerator this build can use, and the backend that runs on it.
// A narrow interface so that the engine compiles and runs unchanged without CUDA (the default
// build): there, asking for a GPU is an input error that says "not built with CUDA".
//
// Offload rule (`--gpu-layers N`, "all" = n_layer): the LAST N transformer layers run on the
// device, and with them (N >= 1) the final RMSNorm and the output matmul; with N = n_layer the
// embedding lookup too. The CPU runs the embedding and layers 0 .. n_layer-N-1, uploads the
// residual stream once per forward pass, and gets back only the logits rows asked for. Weights
// are uploaded once, on first use. The keys and values of offloaded layers live
// only on the device, in blocks laid out like the host KvStore (same block table, same block
// size, F32 or F16 storage), so batching, paging and the prefix cache work unchanged.
//
// Portable mode (`--mode portable`, the only GPU mode implemented): every device kernel
// computes the canonical orders of docs/DETERMINISM.md operation for operation, so any N gives
// the CPU's logits bits (L5). Status: implemented, compiled, not yet verified on a GPU.
// Which layers run where is model/forward.h's; the backend implements ops only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "model/backend_ops.h"
#include "model/hparams.h"
#include "tzero/types.h"

namespace tzero {

// True when this binary was built with -DTZERO_CUDA=ON.
bool cuda_built();

struct DeviceInfo {
  bool usable = false;  // a CUDA device is present and the driver answers
  std::string name;     // e.g. "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  std::string why_not;  // when !usable: "not built with CUDA", "no CUDA device", the error
};
// Device 0 (tzero uses one device).
DeviceInfo cuda_device_info();
// A one-line description: "NVIDIA H200 (sm_90, 139.8 GiB)" or "none (not built with CUDA)".
std::string describe_device(const DeviceInfo& d);

// The checks of --gpu-layers against --mode (tzero::Error on a bad pair): portable needs
// gpu_layers >= 1, and gpu_layers >= 1 needs portable (no other GPU mode is implemented).
void check_gpu_mode(int gpu_layers, Mode mode);

// The CUDA backend (backend/cuda/): the ops of model/backend_ops.h on device 0 for a model
// whose architecture declares `layout`; n_ctx and n_batch as the Forward's; it runs layers
// first_layer .. n_layer - 1 (their keys and values live on the device). Weights are uploaded
// once, on first use. Throws tzero::Error "not built with CUDA" in a build without it, and a
// tzero::Error naming the cause when no usable device is present.
std::unique_ptr<BackendOps> make_cuda_backend(const HParams& hp, const ActLayout& layout,
                                              int first_layer, int n_ctx, int n_batch);

// Device memory bandwidth in GB/s measured with a copy kernel over `bytes` (read + write
// counted), best of `reps`. Throws like make_cuda_backend.
double measure_device_bandwidth(size_t bytes, int reps);

}  // namespace tzero
