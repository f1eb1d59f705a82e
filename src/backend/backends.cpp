#include "backend/backends.h"

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "base/error.h"

namespace tzero {

std::unique_ptr<Forward> make_forward(const Model& model, ThreadPool& pool,
                                      const ForwardConfig& c) {
  std::unique_ptr<Architecture> arch = make_architecture(model);
  auto host = std::make_unique<CpuBackend>(model.hparams(), arch->layout(), pool, c.kernels, c.fast,
                                           c.n_ctx, model.rope_factors(c.n_ctx));
  std::unique_ptr<BackendOps> device;
  if (c.gpu_layers > 0 && model.hparams().moe())
    throw Error("--gpu-layers: the CUDA backend does not run mixture-of-experts layers (" +
                model.hparams().arch_name + " with " + std::to_string(model.hparams().n_expert) +
                " experts) yet; run with --gpu-layers 0");
  if (c.gpu_layers > 0 && model.hparams().hybrid())
    throw Error("--gpu-layers: the CUDA backend does not run " + model.hparams().arch_name +
                "'s linear-attention (Gated DeltaNet) layers yet; run with --gpu-layers 0");
  if (c.gpu_layers > 0 &&
      (model.hparams().arch == Arch::Gemma3 || model.hparams().arch == Arch::Gemma2))
    throw Error("--gpu-layers: the CUDA backend does not run " + model.hparams().arch_name +
                " layers (sliding windows, GeGLU, soft-capping) yet; run with --gpu-layers 0");
  if (c.gpu_layers > 0 && (model.rope_factors(c.n_ctx) || model.hparams().rope_attn_factor != 1))
    throw Error(
        "--gpu-layers: the CUDA backend has no rope frequency factors (llama 3.1 rope_freqs, "
        "LongRoPE) yet; run with --gpu-layers 0");
  if (c.gpu_layers > 0 && model.hparams().rope_scaling == RopeScaling::Yarn)
    throw Error("--gpu-layers: the CUDA backend has no YaRN rope yet; run with --gpu-layers 0");
  if (c.gpu_layers > 0)
    device = make_cuda_backend(model.hparams(), arch->layout(),
                               model.hparams().n_layer - c.gpu_layers, c.n_ctx, c.n_batch);
  return std::make_unique<Forward>(model, std::move(arch), c.n_ctx, c.n_batch, std::move(host),
                                   std::move(device), c.gpu_layers);
}

}  // namespace tzero
