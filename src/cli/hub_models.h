// Models named by Hugging Face repository on the command line: `tzero pull`'s progress display,
// and -m ORG/REPO:QUANT (or --draft-model) wherever a model path goes, pulled into the Hugging
// Face cache first (hub/hf_hub.h).
#pragma once

#include <CLI/CLI.hpp>

#include "hub/hf_hub.h"

namespace tzero::cli {

// Notes and a progress display on stderr: one line rewritten on a terminal, a line every 10%
// otherwise.
hub::PullEvents stderr_pull_events(const std::string& what);

// For the parsed subcommand: a --model or --draft-model value that is not a file but reads as
// ORG/REPO[:QUANT] is replaced by the cached file's path, downloaded when missing. (probe's
// --model names a server's model: not touched.)
void resolve_hub_models(CLI::App& sub);

}  // namespace tzero::cli
