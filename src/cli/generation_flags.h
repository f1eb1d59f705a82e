// The generation flags `tzero chat` shares with `tzero run`, spelled and checked as run spells
// them: the sampling chain (--temp, --seed, --top-k, --top-p, --min-p, --repeat-penalty,
// --repeat-last-n, --presence-penalty, --frequency-penalty), --kernels, --mode, --gpu-layers
// and -b. (tzero run registers its own copies today; they agree flag for flag.)
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

// Registers the flags on `sub`, writing into `f` (which must outlive the parse).
void add_generation_flags(CLI::App* sub, GenerationFlags& f);

}  // namespace tzero::cli
