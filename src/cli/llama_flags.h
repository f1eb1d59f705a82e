// llama.cpp's spellings of common flags (llama-cli, llama-server): where one means the same as a
// tzero option of the command it is given to, it is rewritten to that option before parsing;
// where it has no meaning in tzero, the parse ends with one line that says why and what to use.
// The one table is in llama_flags.cpp (and, as a short table, in README.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tzero::cli {

// Rewrites llama.cpp spellings in args (argv without the program name, in order) to the tzero
// options of the command they are given to; a spelling the command has itself is left alone.
// Throws tzero::Error ("CMD: FLAG: why, and what to use") for one tzero does not take.
void rewrite_llama_flags(CLI::App& app, std::vector<std::string>& args);

// Adds to every subcommand's --help a footer listing the llama.cpp spellings it accepts.
void add_llama_flag_footers(CLI::App& app);

// The llama.cpp spellings that map to one of these tzero option names (for suggestions).
struct LlamaAlias {
  std::string spelling, tzero;
};
std::vector<LlamaAlias> llama_aliases_for(const CLI::App& sub);

}  // namespace tzero::cli
