// Generation flags shared by run and chat (cli/generation_flags.h).
#include "cli/generation_flags.h"

#include <cstdlib>

namespace tzero::cli {

namespace {

// A number in (lo, hi], as the server's top_p and repetition_penalty.
CLI::Validator in_half_open(double lo, double hi) {
  const std::string range = "(" + std::to_string(int(lo)) + ", " + std::to_string(int(hi)) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& v) {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        return end != v.c_str() && *end == 0 && x > lo && x <= hi
                   ? std::string()
                   : "'" + v + "' is not in " + range;
      },
      range);
}

}  // namespace

void add_generation_flags(CLI::App* sub, SamplingParams& sp) {
  sub->add_option("--temp", sp.temperature, "Temperature (0: greedy, ties to the lowest id)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--seed", sp.seed, "Sampling seed (used when --temp > 0)")->capture_default_str();
  sub->add_option("--top-k", sp.top_k, "Keep the K most likely tokens (0: off; server: top_k)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  sub->add_option("--top-p", sp.top_p,
                  "Keep the smallest set of tokens whose probability reaches P (1: off; server: "
                  "top_p)")
      ->capture_default_str()
      ->check(in_half_open(0, 1));
  sub->add_option("--min-p", sp.min_p,
                  "Keep tokens at least P times as likely as the best (0: off; server: min_p)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--repeat-penalty", sp.repetition_penalty,
                  "Repetition penalty over the last --repeat-last-n tokens (1: off; server: "
                  "repetition_penalty or repeat_penalty)")
      ->capture_default_str()
      ->check(in_half_open(0, 100));
  sub->add_option("--repeat-last-n", sp.penalty_last_n,
                  "Tokens (prompt and output) the repetition penalty looks at (-1: all, 0: off; "
                  "server: repeat_last_n)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 30));
  sub->add_option("--presence-penalty", sp.presence_penalty,
                  "Subtracted once from the logit of every token already generated (server: "
                  "presence_penalty)")
      ->capture_default_str()
      ->check(CLI::Range(-100.0, 100.0));
  sub->add_option("--frequency-penalty", sp.frequency_penalty,
                  "Subtracted from a token's logit once per time it was generated (server: "
                  "frequency_penalty)")
      ->capture_default_str()
      ->check(CLI::Range(-100.0, 100.0));
}

}  // namespace tzero::cli
