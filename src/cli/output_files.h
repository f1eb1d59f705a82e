// Files a command writes: never written over unless the user says --force (a lock, a converted
// model, a report may be the only copy of something that took hours to make).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace tzero::cli {

// Registers --force on the subcommand.
void add_force_flag(CLI::App* sub, bool& force);

// Throws tzero::Error when `path` is an existing regular file and force is false: "PATH exists: give --force to
// write over it, or another FLAG". Call before any work, so nothing is computed in vain.
void check_output_free(const std::string& path, bool force, const std::string& flag);

}  // namespace tzero::cli
