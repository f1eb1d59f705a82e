// The SentencePiece-style half of the Hugging Face import (hf_import.h): a tokenizer.json whose
// model is BPE over "▁" with byte fallback (Llama 2, Mistral v0.1, Gemma), as Hugging Face
// converts SentencePiece models, becomes a tokenizer.ggml.model = "llama" vocabulary that the
// SentencePiece tokenizer (spm.cpp) encodes the same way.
//
// What is accepted: the normalizer Replace(" " -> "▁"), optionally with Prepend("▁") (the
// dummy prefix), in a Sequence in any order; or no normalizer and a Metaspace pre-tokenizer
// (replacement "▁", split false; its prepend scheme gives the dummy prefix). A pre-tokenizer
// Split on the literal " " after that Replace finds nothing (the normalizer has replaced every
// space) and is accepted as the no-op it is (Gemma 3). Anything else is an error naming the
// step.
//
// Scores: Hugging Face merges the adjacent pair of lowest merge rank; SentencePiece the adjacent
// pair whose concatenation is the token of highest score. A token's score is minus the rank of
// the first merge that produces it, so the two agree where each token's merges are listed
// together (true of files converted from SentencePiece, whose merges are ordered by the
// piece's score); a token that no merge produces gets -(number of merges + 1). <0xNN> tokens
// are byte tokens.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tzero {

// Whether tokenizer.json describes SentencePiece-style BPE: no ByteLevel step anywhere, and
// byte_fallback, a Metaspace step or a normalizer that writes "▁".
bool is_spm_style(const nlohmann::json& tokenizer_json);

// Checks the normalizer and pre-tokenizer (errors start with `where`) and returns whether the
// text gets the dummy prefix "▁" (tokenizer.ggml.add_space_prefix).
bool spm_add_space_prefix(const nlohmann::json& tokenizer_json, const std::string& where);

// tokenizer.ggml.scores for `tokens` from the ranked `merges` (pairs, rank = index).
std::vector<float> spm_scores_from_merges(
    const std::vector<std::string>& tokens,
    const std::vector<std::pair<std::string, std::string>>& merges);

}  // namespace tzero
