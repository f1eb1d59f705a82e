// llama.cpp's and vLLM's extension fields (server/extension_fields.h).
#include "server/extension_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include "server/json_fields.h"

namespace tzero::server {

using nlohmann::json;

namespace {

enum class Kind { honoured, ignored, default_only };

struct Field {
  Kind kind;
  bool chat = true, completions = true;  // the endpoints that take it
};

// Every extension field, with what tzero does with it (docs/SERVER.md, "Extension fields").
const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> f = {
      // llama.cpp
      {"n_predict", {Kind::honoured}},        // max_tokens (-1: until the context is full)
      {"n_probs", {Kind::honoured}},          // logprobs with N alternatives
      {"repeat_penalty", {Kind::honoured}},   // repetition_penalty
      {"repeat_last_n", {Kind::honoured}},    // the penalty window (-1: whole context, 0: off)
      {"cache_prompt", {Kind::ignored}},      // the prefix cache is always on
      {"id_slot", {Kind::ignored}},           // the engine picks the slot
      {"n_keep", {Kind::ignored}},            // no context shift: a full context stops
      {"t_max_predict_ms", {Kind::ignored}},  // answers must not depend on timing
      {"samplers", {Kind::ignored}},          // the chain's order is fixed (sampler-v2)
      {"min_keep", {Kind::ignored}},          // at least one token is always kept
      {"mirostat_tau", {Kind::ignored}},      // only with mirostat != 0
      {"mirostat_eta", {Kind::ignored}},
      {"dynatemp_exponent", {Kind::ignored}},  // only with dynatemp_range != 0
      {"dry_base", {Kind::ignored}},           // only with dry_multiplier != 0
      {"dry_allowed_length", {Kind::ignored}},
      {"dry_penalty_last_n", {Kind::ignored}},
      {"dry_sequence_breakers", {Kind::ignored}},
      {"xtc_threshold", {Kind::ignored}},  // only with xtc_probability != 0
      {"typical_p", {Kind::default_only}},
      {"tfs_z", {Kind::default_only}},
      {"mirostat", {Kind::default_only}},
      {"dynatemp_range", {Kind::default_only}},
      {"dry_multiplier", {Kind::default_only}},
      {"xtc_probability", {Kind::default_only}},
      // vLLM
      {"stop_token_ids", {Kind::honoured}},        // stop tokens (besides EOS and end of turn)
      {"best_of", {Kind::honoured, true, false}},  // chat; completions has it as OpenAI's
      {"length_penalty", {Kind::ignored}},         // only with beam search
      {"spaces_between_special_tokens", {Kind::ignored}},  // special tokens are never in text
      {"min_tokens", {Kind::default_only}},
      {"skip_special_tokens", {Kind::default_only}},
      {"include_stop_str_in_output", {Kind::default_only}},
      {"use_beam_search", {Kind::default_only}},
  };
  return f;
}

using namespace json_fields;

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A default-only number: only `off` (the value that leaves the feature off) is accepted.
void only_number(const json& body, const char* name, double off, const char* what) {
  if (auto v = get_finite(body, name); v && *v != off)
    throw bad(name, "'" + std::string(name) + "' (" + what + ") is not supported by tzero: only " +
                        num(off) + " (off) is accepted; got " + num(*v) + ".");
}

void only_bool(const json& body, const char* name, bool off, const char* what) {
  if (auto v = get_bool(body, name); v && *v != off)
    throw bad(name, "'" + std::string(name) + "' (" + what + ") is not supported by tzero: only " +
                        (off ? "true" : "false") + " is accepted.");
}

// Both spellings of one setting: refused, as max_tokens with max_completion_tokens is.
void not_both(const json& body, const char* ours, const char* theirs) {
  if (field(body, ours) && field(body, theirs))
    throw bad(theirs, "Give '" + std::string(ours) + "' or '" + theirs + "', not both.");
}

void check_ignored(const json& body) {
  for (const char* b : {"cache_prompt", "spaces_between_special_tokens"}) get_bool(body, b);
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const char* i : {"n_keep", "t_max_predict_ms", "dry_allowed_length", "dry_penalty_last_n"})
    get_int(body, i, -1, kMax);
  get_int(body, "id_slot", -1, kMax);
  get_int(body, "min_keep", 0, kMax);
  for (const char* n :
       {"mirostat_tau", "mirostat_eta", "dynatemp_exponent", "dry_base", "xtc_threshold"})
    get_finite(body, n);
  get_finite(body, "length_penalty");
  // samplers: llama.cpp takes an array of names or a string of one-letter codes.
  if (const json* v = field(body, "samplers")) {
    if (v->is_array()) {
      for (const json& s : *v)
        if (!s.is_string()) throw wrong_type("samplers", s, "a string or an array of strings");
    } else if (!v->is_string()) {
      throw wrong_type("samplers", *v, "a string or an array of strings");
    }
  }
  if (const json* v = field(body, "dry_sequence_breakers")) {
    if (!v->is_array()) throw wrong_type("dry_sequence_breakers", *v, "an array of strings");
    for (const json& s : *v)
      if (!s.is_string()) throw wrong_type("dry_sequence_breakers", s, "an array of strings");
  }
}

void check_default_only(const json& body) {
  only_number(body, "typical_p", 1.0, "locally typical sampling");
  only_number(body, "tfs_z", 1.0, "tail-free sampling");
  only_number(body, "mirostat", 0.0, "Mirostat sampling");
  only_number(body, "dynatemp_range", 0.0, "dynamic temperature");
  only_number(body, "dry_multiplier", 0.0, "DRY sampling");
  only_number(body, "xtc_probability", 0.0, "XTC sampling");
  only_number(body, "min_tokens", 0.0, "a minimum of generated tokens");
  only_bool(body, "skip_special_tokens", true, "special tokens in the text");
  only_bool(body, "include_stop_str_in_output", false, "the stop string in the text");
  only_bool(body, "use_beam_search", false, "beam search");
}

}  // namespace

bool is_extension_field(const std::string& name, Endpoint ep) {
  auto it = fields().find(name);
  if (it == fields().end()) return false;
  return ep == Endpoint::chat ? it->second.chat : it->second.completions;
}

void parse_extension_fields(const json& body, OpenAiRequest& r) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  check_ignored(body);
  check_default_only(body);

  // n_predict: llama.cpp's max_tokens; -1 (its default) is "until the context is full".
  not_both(body,
           r.endpoint == Endpoint::chat && field(body, "max_completion_tokens")
               ? "max_completion_tokens"
               : "max_tokens",
           "n_predict");
  if (auto v = get_int(body, "n_predict", -1, kMax)) {
    if (*v == 0) throw bad("n_predict", "'n_predict' must be -1 (until the context) or >= 1.");
    if (*v > 0)
      r.max_tokens = int(*v);
    else
      r.until_context = true;
  }

  not_both(body, "repetition_penalty", "repeat_penalty");
  if (auto x = get_finite(body, "repeat_penalty")) {
    if (!(*x > 0.0 && *x <= 100.0))
      throw bad("repeat_penalty", "'repeat_penalty' must be in (0, 100]; got " + num(*x) + ".");
    r.params.sampling.repetition_penalty = float(*x);
  }
  if (auto v = get_int(body, "repeat_last_n", -1, kMax)) r.params.sampling.penalty_last_n = int(*v);

  // n_probs: llama.cpp's logprobs; 0 (its default) is off.
  not_both(body, "logprobs", "n_probs");
  if (r.endpoint == Endpoint::chat) not_both(body, "top_logprobs", "n_probs");
  if (auto v = get_int(body, "n_probs", 0, 20); v && *v > 0) {
    r.want_logprobs = true;
    r.top_logprobs = int(*v);
  }

  if (const json* v = field(body, "stop_token_ids")) {
    if (!v->is_array()) throw wrong_type("stop_token_ids", *v, "an array of token ids");
    for (const json& t : *v) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > kMax)
        throw bad("stop_token_ids", "'stop_token_ids' must hold non-negative integer token ids.",
                  "invalid_type");
      r.params.stop_tokens.push_back(int32_t(t.get<int64_t>()));
    }
  }

  if (r.endpoint == Endpoint::chat)
    if (auto v = get_int(body, "best_of", 1, 128); v && *v != r.n)
      throw bad("best_of", "'best_of' must equal 'n' (tzero returns every choice).");
}

}  // namespace tzero::server
