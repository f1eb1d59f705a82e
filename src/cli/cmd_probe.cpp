// tzero probe (being built; see the server issue).
#include "base/error.h"
#include "cli/commands.h"

namespace tz::cli {

Command add_probe(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("probe", "(not built yet)");
  return {sub, []() -> int { throw Error("tzero probe is not built yet"); }};
}

}  // namespace tz::cli
