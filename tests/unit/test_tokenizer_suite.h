// Shared by the tokenizer tests: llama.cpp's test-tokenizer-0 suite files, and small
// byte-level BPE vocabularies written as GGUF for tests that need a vocabulary of their own.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/test_support.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/vocab.h"

namespace tzero::test {

struct SuiteCase {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: cases separated by "\n__ggml_vocab_test__\n" (the last one terminated by it);
// .out: one line of space-separated ids per case.
inline std::vector<SuiteCase> load_suite(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = read_file(inp_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<SuiteCase> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream out(read_file(out_path));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(out, line)) break;
    std::istringstream ids(line);
    int32_t id;
    while (ids >> id) c.ids.push_back(id);
  }
  return cases;
}

// A byte-level BPE vocabulary: ids 0..255 are the byte-level characters of bytes 0..255, then
// `extra` (raw text, written in the byte-level alphabet) as normal tokens, then `added` as
// tokens of type `added_type` (raw text). Writes it to `path` with `merges` (raw "a b" pairs,
// converted) and pre-tokenizer `pre`. Returns the path.
using Merges = std::vector<std::pair<std::string, std::string>>;
inline std::string write_byte_level_vocab(const std::string& path,
                                          const std::vector<std::string>& extra,
                                          const Merges& merges, const std::string& pre,
                                          const std::vector<std::string>& added = {},
                                          int added_type = 3) {
  auto enc = [](const std::string& raw) {
    std::string s;
    byte_level::encode(raw, s);
    return s;
  };
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(enc(std::string(1, char(b))));
    types.push_back(1);
  }
  for (const auto& e : extra) {
    tokens.push_back(enc(e));
    types.push_back(1);
  }
  for (const auto& a : added) {
    tokens.push_back(a);
    types.push_back(added_type);
  }
  std::vector<std::string> m;
  for (const auto& [a, b] : merges) m.push_back(enc(a) + " " + enc(b));
  GgufWriter w;
  w.add_string("tokenizer.ggml.model", "gpt2");
  if (!pre.empty()) w.add_string("tokenizer.ggml.pre", pre);
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", m);
  w.write(path);
  return path;
}

// Tokenizes every case of a suite without BOS/EOS or special parsing (as the suites were made),
// expects each case's ids, prints the count and returns how many passed.
inline int run_suite(const Vocab& vocab, const std::string& inp, const std::string& out,
                     const char* name) {
  const auto cases = load_suite(inp, out);
  EXPECT_EQ(cases.size(), 46u) << "the suite has 46 cases";
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = vocab.tokenize(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(got, cases[i].ids) << name << " case " << i << ": \"" << cases[i].text << "\"";
    passed += got == cases[i].ids;
  }
  std::printf("%s tokenizer suite: %d/%zu cases passed\n", name, passed, cases.size());
  return passed;
}

}  // namespace tzero::test
