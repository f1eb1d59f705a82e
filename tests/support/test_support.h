// Helpers shared by the tests: where the shared data is, scratch directories, and running the
// real tzero binary as a subprocess.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tzero::test {

// Path of a file under ../shared/data, or "" when it is absent (tests then GTEST_SKIP).
std::string shared_data(const std::string& relative);

// Skips the current test with a visible message when the shared file is absent.
#define TZ_REQUIRE_SHARED(var, rel)                            \
  const std::string var = ::tzero::test::shared_data(rel);     \
  if (var.empty())                                             \
  GTEST_SKIP() << "shared data absent: ../shared/data/" << rel \
               << " (see ../shared/data/PROVENANCE.md)"

// A fresh directory under the build's temp area, removed at process exit.
std::string scratch_dir();

struct CliResult {
  int exit_code = -1;
  std::string out;        // stdout
  std::string err;        // stderr
  double seconds = 0;     // wall time from the spawn to the exit
  long peak_rss_kb = -1;  // this child's own peak resident memory (wait4's ru_maxrss, KiB)
};

// Runs the tzero binary with these arguments (no shell), capturing stdout and stderr.
CliResult run_tzero(const std::vector<std::string>& args, const std::string& stdin_text = "");
// Runs any program (argv[0] a path, no shell) the same way.
CliResult run_command(const std::vector<std::string>& argv, const std::string& stdin_text = "");

// The command line that starts the tzero binary: {TZ_BINARY}, or in a cross build whose tests run
// under an emulator (CMAKE_CROSSCOMPILING_EMULATOR, e.g. qemu-aarch64 -L SYSROOT) the emulator's
// words first, since the host cannot exec the target's binaries itself. argv[0] is a path.
std::vector<std::string> tzero_command();

// Makes (once per process) a gen-model file and returns its path. layers > 0: that many layers
// instead of the preset's (gen-model --layers).
std::string generated_model(const std::string& preset, const std::string& dtype, uint64_t seed = 1,
                            int layers = 0);

// n values from a normal distribution (mean 0, standard deviation `scale`), reproducible in seed.
std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace tzero::test
