// The subcommands of the tzero command line. Each registers its options on the app and returns
// the function that runs it; errors are thrown as tzero::Error and reported by main.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "tzero/types.h"

namespace tzero::cli {

struct Command {
  CLI::App* sub;             // the parsed subcommand
  std::function<int()> run;  // runs it after parsing; returns the exit status
};

Command add_run(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_info(CLI::App& app);
Command add_convert(CLI::App& app);
Command add_gen_model(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_diff(CLI::App& app);
Command add_demo(CLI::App& app);
Command add_audit(CLI::App& app);
Command add_fingerprint(CLI::App& app);
Command add_check_op(CLI::App& app);
Command add_chat(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_probe(CLI::App& app);
Command add_device(CLI::App& app);
Command add_embed(CLI::App& app);
Command add_lock(CLI::App& app);
Command add_verify(CLI::App& app);
Command add_pull(CLI::App& app);

// Reads a whole file ("-": standard input); throws tzero::Error naming it.
std::string read_text_file(const std::string& path);
// items / seconds, or nothing when too little was measured for a rate to mean anything (no
// item, or under a millisecond: -n 0 evaluates nothing and would give millions per second).
std::optional<double> measured_rate(double items, double seconds);
// "12.3 tokens/s", or "n/a tokens/s" for no rate.
std::string rate_text(std::optional<double> rate, const char* unit = "tokens/s");
// Hardware threads, at least 1.
int default_threads();
// A duration flag's value in seconds: N, or N followed by s, m or h ("90", "30s", "10m", "1h");
// tzero::Error naming the flag for anything else or for a value not above 0.
double duration_seconds(const std::string& text, const std::string& flag);
// A --mode value (deterministic, fast, portable) as the enum; throws tzero::Error otherwise.
Mode mode_arg(const std::string& s);

}  // namespace tzero::cli
