// The compute flags (cli/compute_flags.h).
#include "cli/compute_flags.h"

#include "cli/commands.h"

namespace tzero::cli {

const char* kernels_help() {
  return "Kernel set: scalar, avx2, avx512, amx, amx-emu (slow; x86-64), neon, neon-dotprod, "
         "neon-i8mm (aarch64) or auto (results do not depend on it)";
}

ComputeOptions ComputeFlags::options() const {
  ComputeOptions c;
  c.n_threads = n_threads;
  c.n_ctx = n_ctx;
  c.n_batch = n_batch;
  c.kernels = kernels;
  c.op_overrides = op_overrides;
  c.mode = mode_arg(mode);
  c.gpu_layers = parse_gpu_layers_arg(gpu_layers);
  c.kv_type = parse_kv_type_arg(kv_type);
  c.use_mmap = !no_mmap;
  c.pipeline_split = pipeline_split;
  c.rank_timeout_s = rank_timeout;
  c.micro_batches = micro_batches;
  c.expert_parallel = expert_parallel;
  return c;
}

void add_compute_flags(CLI::App* sub, ComputeFlags& f, unsigned which,
                       const std::string& batch_help) {
  f.n_threads = default_threads();
  if (which & kThreads)
    sub->add_option("-t,--threads", f.n_threads, "Threads (results do not depend on it)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
  if (which & kCtx)
    sub->add_option("-c,--ctx-size,--ctx", f.n_ctx, "Context per sequence (0: min(trained, 4096))")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
  if (which & kBatch)
    sub->add_option("-b,--batch-size", f.n_batch,
                    batch_help.empty() ? "Prefill chunk: prompt tokens per forward pass (results "
                                         "do not depend on it)"
                                       : batch_help)
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 16));
  if (which & kKernels)
    sub->add_option("--kernels", f.kernels, kernels_help())->capture_default_str();
  if (which & kOps)
    sub->add_option("--op", f.op_overrides,
                    "Use a registered custom kernel: OP=NAME (e.g. matmul.f32=mine); repeatable "
                    "(named in the fingerprint)");
  if (which & kMode)
    sub->add_option("--mode", f.mode,
                    "deterministic (the contract), fast (no contract, to measure its cost) or "
                    "portable (with --gpu-layers: the GPU in the CPU's canonical orders)")
        ->capture_default_str()
        ->check(CLI::IsMember({"deterministic", "fast", "portable"}));
  if (which & kGpuLayers)
    sub->add_option("--gpu-layers", f.gpu_layers,
                    "Run the last N layers (or 'all') and the output head on the CUDA device; "
                    "needs --mode portable (the CPU's orders, the CPU's bits)")
        ->capture_default_str();
  if (which & kKvType)
    sub->add_option("--kv-type", f.kv_type, "KV cache type: f32 or f16 (changes the bits)")
        ->capture_default_str()
        ->check(CLI::IsMember({"f32", "f16"}));
  if (which & kMmap)
    sub->add_flag("--no-mmap", f.no_mmap,
                  "Always read the model file into memory, never map it. By default it is read "
                  "when it fits in half the available memory (decode streams it faster) and "
                  "mapped otherwise; TZ_MMAP=1 always maps (processes then share one copy). A "
                  "mapped file truncated while in use is a SIGBUS");
  if (which & kRanks) {
    sub->add_option("--pipeline-split", f.pipeline_split,
                    "Under mpirun -np N (the MPI build): split the layers over the ranks by "
                    "weight 'bytes', by 'layers', or at the first layer of ranks 1..N-1 "
                    "(12,24,36). Results do not depend on it (docs/DISTRIBUTED.md)")
        ->capture_default_str();
    sub->add_option("--rank-timeout", f.rank_timeout,
                    "Under mpirun: seconds a pass may take on the other ranks before the job "
                    "ends with an error naming them")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 86400.0));
    sub->add_option("--micro-batches", f.micro_batches,
                    "Under mpirun: the most passes in flight over the ranks, each over its own "
                    "group of the running sequences, so that every rank works (0: one per rank; "
                    "1: one pass at a time). Results do not depend on it")
        ->capture_default_str()
        ->check(CLI::Range(0, 64));
    sub->add_flag("--expert-parallel", f.expert_parallel,
                  "Under mpirun -np N (N >= 2): split a MoE model's routed experts over ranks "
                  "1..N-1, every layer's, each token's chosen experts computed where they live "
                  "(the layers stay split as --pipeline-split says). Results do not depend on it");
  }
}

}  // namespace tzero::cli
