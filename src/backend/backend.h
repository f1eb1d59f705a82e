// The device backend: which accelerator this build can use, and the transformer layers it runs.
// A narrow interface so that the engine compiles and runs unchanged without CUDA (the default
// build): there, asking for a GPU is an input error that says "not built with CUDA".
//
// Offload rule (`--gpu-layers N`, "all" = n_layer): the LAST N transformer layers run on the
// device, and with them (N >= 1) the final RMSNorm and the output matmul; with N = n_layer the
// embedding lookup too. The CPU runs the embedding and layers 0 .. n_layer-N-1, uploads the
// residual stream once per forward pass, and gets back only the logits rows asked for. Weights
// are uploaded once, when the backend is made. The keys and values of offloaded layers live
// only on the device, in blocks laid out like the host KvStore (same block table, same block
// size, F32 or F16 storage), so batching, paging and the prefix cache work unchanged.
//
// Portable mode (`--mode portable`, the only GPU mode implemented): every device kernel
// computes the canonical orders of docs/DETERMINISM.md operation for operation, so any N gives
// the CPU's logits bits (L5). Status: implemented, compiled, not yet verified on a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"

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

// "all" -> n_layer; a number in [0, n_layer] -> itself; anything else throws tzero::Error.
int parse_gpu_layers(const std::string& text, int n_layer);
// The checks of --gpu-layers against --mode (tzero::Error on a bad pair): portable needs
// gpu_layers >= 1, and gpu_layers >= 1 needs portable (no other GPU mode is implemented).
void check_gpu_mode(int gpu_layers, const std::string& mode);

// Called by the backend when the forward pass is traced: a host copy of each named tensor, in
// the CPU forward's names and shapes (model/forward.h). The hook may change the values (the
// perturbation test hook); the backend uploads them back.
using DeviceTraceFn =
    std::function<void(std::string_view name, int layer, float* host, size_t n_tok, size_t len)>;

// The layers a device runs for one Forward. Not thread-safe; one per Forward.
class DeviceLayers {
 public:
  virtual ~DeviceLayers() = default;
  virtual int first_layer() const = 0;  // n_layer - N
  virtual bool embeds() const = 0;      // N == n_layer: the device does the embedding lookup
  // Runs layers first_layer() .. n_layer-1 and the output head for the batch. x: the residual
  // stream after layer first_layer()-1 ((n_tok, n_embd) host floats; ignored when embeds()).
  // kv: the host store whose geometry (blocks, block size, type) the device store mirrors; a
  // different store object (or geometry) resets the device store. logits as in
  // Forward::eval_batch. trace: null unless traced.
  virtual void eval(const ForwardBatch& b, const float* x, const KvStore& kv, float* logits,
                    const DeviceTraceFn& trace) = 0;
  virtual std::string describe() const = 0;  // for --json and logs
};

// Makes the CUDA backend for the last gpu_layers layers (1 .. n_layer) of the model, uploading
// their weights. n_ctx and n_batch as Forward's. Throws tzero::Error "not built with CUDA" in a
// build without it, and a tzero::Error naming the cause when no usable device is present.
std::unique_ptr<DeviceLayers> make_cuda_layers(const Model& model, const RopeTable& rope,
                                               int gpu_layers, int n_batch, int n_ctx);

// Device memory bandwidth in GB/s measured with a copy kernel over `bytes` (read + write
// counted), best of `reps`. Throws like make_cuda_layers.
double measure_device_bandwidth(size_t bytes, int reps);

}  // namespace tzero
