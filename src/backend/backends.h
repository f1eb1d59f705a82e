// Making a Forward with the usual backends: the CPU backend for the host, and the CUDA backend
// for the last gpu_layers layers when asked. The one place that picks backends, so run, chat,
// bench and the engine build the same stack.
#pragma once

#include <memory>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "model/forward.h"

namespace tzero {

struct ForwardConfig {
  int n_ctx = 0;    // most positions per sequence
  int n_batch = 1;  // most tokens per pass
  KernelSet kernels = scalar_kernels();
  bool fast = false;   // --mode fast (CPU only): no reproducibility contract
  int gpu_layers = 0;  // the last N layers on the CUDA device (backend/backend.h)
};

// Throws tzero::Error for a GPU request this build or machine cannot serve.
std::unique_ptr<Forward> make_forward(const Model& model, ThreadPool& pool,
                                      const ForwardConfig& config);

}  // namespace tzero
