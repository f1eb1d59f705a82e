// The compute flags, registered once for every command that computes: -t, -c, -b, --kernels,
// --op, --mode, --gpu-layers, --kv-type, --no-mmap. They fill a ComputeOptions
// (runtime/session.h), parsed here once, so every command honours every flag the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace tzero::cli {

// Which flags a command takes (a command whose -c means something else leaves kCtx out).
enum ComputeFlag : unsigned {
  kThreads = 1u << 0,
  kCtx = 1u << 1,
  kBatch = 1u << 2,
  kKernels = 1u << 3,
  kOps = 1u << 4,
  kMode = 1u << 5,
  kGpuLayers = 1u << 6,
  kKvType = 1u << 7,
  kMmap = 1u << 8,
  kRanks = 1u << 9,  // --pipeline-split, --rank-timeout, --micro-batches, --expert-parallel
  kAllCompute = (1u << 10) - 1,
};

struct ComputeFlags {
  int n_threads = 1;  // default_threads() once registered
  int n_ctx = 0;
  int n_batch = 64;
  std::string kernels = "auto";
  std::vector<std::string> op_overrides;
  std::string mode = "deterministic";
  std::string gpu_layers = "0";
  std::string kv_type = "f32";
  bool no_mmap = false;
  std::string pipeline_split = "bytes";
  double rank_timeout = 60;
  int micro_batches = 0;
  bool expert_parallel = false;

  // The typed options (tzero::Error naming the flag for a bad value).
  ComputeOptions options() const;
};

// Registers the flags in `which` on `sub`; batch_help says what -b means for this command.
void add_compute_flags(CLI::App* sub, ComputeFlags& f, unsigned which = kAllCompute,
                       const std::string& batch_help = "");

// The kernel sets this build can name (for help texts and errors).
const char* kernels_help();

}  // namespace tzero::cli
