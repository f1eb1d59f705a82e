// The sampling flags `tzero run` and `tzero chat` share, registered once: --temp, --seed,
// --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --presence-penalty,
// --frequency-penalty, as tzero serve's request fields set the chain. The compute flags
// (threads, kernels, mode, ...) are cli/compute_flags.h's.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tzero/sampling.h"

namespace tzero::cli {

// Registers the flags on `sub` (`sampling` must outlive the parse).
void add_generation_flags(CLI::App* sub, SamplingParams& sampling);

}  // namespace tzero::cli
