// tzero serve (being built; see the server issue).
#include "base/error.h"
#include "cli/commands.h"

namespace tz::cli {

Command add_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "(not built yet)");
  return {sub, []() -> int { throw Error("tzero serve is not built yet"); }};
}

}  // namespace tz::cli
