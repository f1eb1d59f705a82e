// The speculative decoding flags (runtime/speculative.h), in llama.cpp's spellings: --draft-model
// FILE (-md/--model-draft: cli/llama_flags.cpp), --spec-type ngram-simple (prompt lookup, no
// second model), --draft-max N (--draft, --draft-n), --draft-min N.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "runtime/session.h"
#include "runtime/speculative.h"

namespace tzero::cli {

struct SpeculativeFlags {
  std::string draft_model;
  std::string spec_type;               // "" (none, or draft with a draft model), "ngram-simple"
  int draft_max = -1, draft_min = -1;  // -1: not given (SpeculativeOptions' defaults)
};

// Registers the flags on `sub` (`flags` must outlive the parse).
void add_speculative_flags(CLI::App* sub, SpeculativeFlags& flags);

// The options the flags ask for; a draft model is opened with the target's compute options and
// context (on the CPU). tzero::Error for a bad combination, count or file (counts checked first).
SpeculativeOptions speculative_options(const SpeculativeFlags& flags, const Session& target);

}  // namespace tzero::cli
