// The one line a command-line mistake gets: "tzero: error: " and then the real problem, worded
// here from CLI11's error and the state of the parse.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tzero::cli {

// The message (without "tzero: error: ") for a failed parse of `app`. CLI11 checks values and
// required options before it looks for arguments it did not recognise, so an unknown option,
// an unknown command or an extra argument is looked for first: "run --bogus" is about --bogus,
// not about the missing --model. A name close to a real one gets "did you mean ...?".
std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e);

// "run", "demo axpy": the names from the top command down to `sub`, without "tzero".
std::string command_path(const CLI::App& sub);

// The candidate closest to `name` when it is close enough to be a likely typo, else "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace tzero::cli
