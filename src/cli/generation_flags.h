// The generation flags `tzero run` and `tzero chat` share, registered once: the sampling chain
// (--temp, --seed, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n,
// --presence-penalty, --frequency-penalty, as tzero serve's request fields set it), --kernels,
// --mode, --gpu-layers and -b.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tzero/sampling.h"

namespace tzero::cli {

struct GenerationFlags {
  SamplingParams sampling;  // temperature 0 (greedy) by default
  std::string kernels = "auto";
  std::string mode = "deterministic";
  std::string gpu_layers = "0";
  int n_batch = 64;  // prompt tokens per forward pass
};

// Where the flags write (each must outlive the parse).
struct GenerationFlagTargets {
  SamplingParams& sampling;
  std::string& kernels;
  std::string& mode;
  std::string& gpu_layers;
  int& n_batch;
};

// Registers the flags on `sub`.
void add_generation_flags(CLI::App* sub, const GenerationFlagTargets& t);
inline void add_generation_flags(CLI::App* sub, GenerationFlags& f) {
  add_generation_flags(sub, {f.sampling, f.kernels, f.mode, f.gpu_layers, f.n_batch});
}

}  // namespace tzero::cli
