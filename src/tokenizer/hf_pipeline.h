// The text pipeline a Hugging Face tokenizer.json spells out ("normalizer" and
// "pre_tokenizer"), read into tzero's steps (normalizer.h, pre_tokenizer.h), and its form in a
// GGUF file.
//
// Supported normalizer steps: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace (String
// or Regex pattern), in a Sequence. Supported pre-tokenizer steps: Split (String or Regex
// pattern; behavior Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous;
// invert), CharDelimiterSplit, Digits, Punctuation, Whitespace, WhitespaceSplit and ByteLevel
// (add_prefix_space, use_regex), in a Sequence, with exactly one ByteLevel. Anything else is a
// tzero::Error naming the step: "tokenizer.json: pre_tokenizer step 3 'Metaspace' is not
// supported ...". Steps are numbered from 1 in the order they run, nested Sequences flattened.
//
// GGUF: a pipeline that is not one of the named ones (tokenizer.ggml.pre) is stored as
// `tokenizer.tzero.pipeline`, a JSON object string
//   {"version": 1, "normalizer": N, "pre_tokenizer": P, "ignore_merges": B}
// where N and P are tokenizer.json's own "normalizer" and "pre_tokenizer" values (null for
// none) and B is model.ignore_merges; tokenizer.ggml.pre is then "tzero-pipeline". The
// vocabulary loader builds the pre-tokenizer from it with the same reader.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "tokenizer/pre_tokenizer.h"

namespace tzero {

inline constexpr const char* kPipelineKey = "tokenizer.tzero.pipeline";
inline constexpr const char* kPipelinePreName = "tzero-pipeline";

// tokenizer.json's "normalizer" (null: none) as steps. `where` starts each error message.
std::vector<NormStep> parse_hf_normalizer(const nlohmann::json& node, const std::string& where);

// tokenizer.json's "pre_tokenizer" as steps (each Split's expression compiled to check it).
std::vector<PreStep> parse_hf_pre_tokenizer(const nlohmann::json& node, const std::string& where);

// The whole pipeline as an unnamed spec (name kPipelinePreName, add_bos false).
PreTokenizerSpec parse_hf_pipeline(const nlohmann::json& normalizer,
                                   const nlohmann::json& pre_tokenizer, bool ignore_merges,
                                   const std::string& where);

// The named spec whose normalizers, steps and ignore_merges equal `spec`'s (expressions
// compared after spelling \x{...} escapes, literal control characters and their escapes the
// same way), or nullptr.
const PreTokenizerSpec* find_equal_named_spec(const PreTokenizerSpec& spec);

// The tokenizer.tzero.pipeline value for these tokenizer.json nodes, and back. The reader
// throws tzero::Error starting with `where` for malformed JSON, another version or an
// unsupported step.
std::string pipeline_metadata(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer,
                              bool ignore_merges);
PreTokenizerSpec parse_pipeline_metadata(std::string_view text, const std::string& where);

}  // namespace tzero
