// The key table: every GGUF key of an architecture's namespace ("{arch}.<suffix>") that llama.cpp
// reads for it (the llama.cpp node-llama-cpp 3.21.1 bundles, docs/MODELS.md), and what tzero
// does with each. Nothing in a model file is skipped silently:
//   - Honoured keys are read by model/hparams.cpp and change what tzero computes as they change
//     llama.cpp's; when absent they take llama.cpp's default (written in `absent`).
//   - Refused keys: a value other than a neutral one is an error naming the key and the value
//     (tzero cannot compute it, or llama.cpp ignores it for this architecture and tzero will
//     not guess which of the two the file's author meant).
//   - NoMath keys change nothing tzero computes (a label; a setting llama.cpp reads and turns
//     off); they are listed so that they are not reported as unknown.
//   - Any other key of the namespace is unknown: Model::load names it in one note on stderr and
//     `tzero info` lists it.
// model/hparams.cpp reads only keys of this table (a test loads every preset through it), and a
// test changes each Honoured and Refused key of each architecture in a real file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "model/hparams.h"

namespace tzero {

enum class KeyUse : unsigned char { Honoured, Refused, NoMath };

struct ModelKey {
  std::string_view suffix;  // after "{arch}."
  KeyUse use;
  // Honoured: llama.cpp's value when the key is absent ("required" when it must be there).
  // Refused: the values that change nothing, '|'-separated ("0|1"); empty: any value is refused.
  std::string_view values;
  std::string_view what;  // one line: what it changes, or why it is refused
};

// The table of one architecture (hparams.arch), in the order docs/MODELS.md lists it.
const std::vector<ModelKey>& model_keys(Arch arch);
const ModelKey* find_model_key(Arch arch, std::string_view suffix);
std::string_view to_string(KeyUse use);

// Refuses the file (GgufFile::fail, naming key and value) when a Refused key of `arch` holds a
// value outside its neutral ones.
void check_refused_keys(const GgufFile& f, Arch arch, const std::string& arch_name);

// The keys of the file's "{arch_name}." namespace that the table of `arch` does not list, in
// file order (cut for printing by the caller).
std::vector<std::string> unknown_model_keys(const GgufFile& f, Arch arch,
                                            const std::string& arch_name);

}  // namespace tzero
