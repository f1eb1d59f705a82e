// The probe's comparison of runs: pure functions over parsed completions.
//
// Two runs are the same output when their texts are equal and, when logprobs are compared, they
// sampled the same token texts with the same logprobs and the same top alternatives (same order,
// same texts, same numbers). Numbers are the same when their doubles have the same bits and,
// when both texts are known, the same JSON text.
//
// Positions: with logprobs, the first divergence is a token index (the first token whose text,
// logprob or alternatives differ; the shorter length when one run is a prefix of the other);
// text only, it is a byte offset into the text.
//
// The largest logprob difference is taken over the positions up to and including the first
// position where the token texts differ (after that the runs condition on different text and
// their logprobs are not comparable): the sampled tokens' logprobs, and the alternatives present
// in both runs' lists at a position.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "probe/client.h"

namespace tzero::probe {

bool same_number(const ExactNumber& a, const ExactNumber& b);

struct Comparison {
  bool identical = true;
  std::optional<size_t> first_divergence;    // token index, or byte offset when text only
  std::optional<size_t> first_token_change;  // first position whose token text differs
  double max_logprob_diff = 0;               // 0 when text only
  bool text_differs = false;
};

// Compares `other` with the reference run. use_logprobs: tokens and logprobs (both runs must
// have them); otherwise the texts only.
Comparison compare_runs(const Completion& ref, const Completion& other, bool use_logprobs);

// Where two runs' tokens differ, position by position, for showing it: the sampled token's
// text, its logprob, the number of alternatives, an alternative's text or its logprob, the
// first of these that differs at each position. Positions run up to and including the first
// whose token text differs (after it the runs condition on different text).
struct TokenDifference {
  size_t position = 0;
  std::string field;  // "token", "logprob", "alternatives", "alternative N token", "alternative
                      // N logprob" (N from 1)
  std::string ref_token, other_token;            // the sampled tokens' texts at the position
  std::string ref_text, other_text;              // the values that differ, as the server wrote them
  std::optional<double> ref_value, other_value;  // numbers' values (logprob fields only)
};

struct TokenDifferences {
  std::vector<TokenDifference> first;  // at most `max` of them, in position order
  size_t positions = 0;                // every differing position (the cut included)
  size_t ref_tokens = 0, other_tokens = 0;
};

TokenDifferences token_differences(const Completion& ref, const Completion& other, size_t max);

// A double's bits as "0x" and 16 hex digits.
std::string double_bits(double v);

// A string equal for two runs exactly when they are the same output (for counting).
std::string output_key(const Completion& c, bool use_logprobs);

struct RunsSummary {
  bool identical = true;                   // every run is the same output as runs[0]
  int unique_outputs = 0;                  // distinct outputs among the runs
  int diverged_runs = 0;                   // runs that differ from runs[0]
  std::optional<size_t> first_divergence;  // the earliest over the runs
  double max_logprob_diff = 0;             // the largest over the runs
  std::vector<Comparison> per_run;         // per_run[i]: runs[i] against runs[0]
};

// runs[0] is the reference (the first solo run). Empty runs give unique_outputs 0.
RunsSummary summarize_runs(const std::vector<Completion>& runs, bool use_logprobs);

// The p-th percentile (0..100) by nearest rank; 0 for no values.
double percentile(std::vector<double> values, double p);

}  // namespace tzero::probe
