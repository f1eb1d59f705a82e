// cli/output_files.h
#include "cli/output_files.h"

#include <filesystem>

#include "base/error.h"

namespace tzero::cli {

void add_force_flag(CLI::App* sub, bool& force) {
  sub->add_flag("--force", force, "Write over output files that exist (refused otherwise)");
}

void check_output_free(const std::string& path, bool force, const std::string& flag) {
  std::error_code ec;
  // Only a regular file holds something to lose (/dev/null, a FIFO or a terminal are written
  // to as they are).
  if (force || path.empty() || path == "-" || !std::filesystem::is_regular_file(path, ec)) return;
  throw Error(path + " exists: give --force to write over it, or another " + flag);
}

}  // namespace tzero::cli
