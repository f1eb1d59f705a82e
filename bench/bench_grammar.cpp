// The token mask's cost (src/grammar/token_mask.h) under a JSON-schema grammar: the masks of
// one object of an array of records, token by token (allowed() then accept()), over a 32k
// vocabulary (llama-spm) and a 152k one (Qwen2's, imported from ../shared/data/vocab/qwen2-hf;
// gpt-2's 50k as well). "cold": a fresh constraint per object, so every state's mask is
// computed; "cached": the same constraint on and on through identical objects, so every mask
// comes from the per-state cache. per_token (time per token) is the counter to read.
// Run: build-bench/bench/tz_bench_grammar [--benchmark_filter=...].
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "format/gguf.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/vocab.h"

namespace {

const char* kSchema = R"({"type": "array", "items": {"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$"},
  "role": {"enum": ["admin", "editor", "viewer"]},
  "joined": {"type": "string", "format": "date"},
  "score": {"type": "number"},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 8},
  "address": {"type": "object", "properties": {"city": {"type": "string"},
              "zip": {"type": "string", "pattern": "^\\d{5}$"}}, "required": ["city"]}},
  "required": ["name", "age", "email", "role"]}})";

const char* kRecord =
    R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "role": "admin", )"
    R"("joined": "1843-07-10", "score": 98.5, "tags": ["math", "engines", "notes"], )"
    R"("address": {"city": "London", "zip": "12345"}})";

struct Setup {
  std::unique_ptr<tzero::GgufFile> file;
  std::unique_ptr<tzero::Vocab> vocab;
  std::shared_ptr<const tzero::TokenTrie> trie;
  std::shared_ptr<const tzero::Grammar> grammar;
  std::vector<int32_t> first, record;  // the tokens of "[" + record, of ", " + record
  std::string error;
};

// Greedy longest-match tokens of text (any token whose text is a prefix).
std::vector<int32_t> longest_match(const tzero::TokenTrie& trie, const std::string& text) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto& nodes = trie.nodes();
    uint32_t node = 0;
    int32_t best = -1;
    size_t best_len = 0;
    for (size_t j = i; j < text.size(); ++j) {
      const auto& n = nodes[node];
      uint32_t next = 0;
      for (uint32_t c = n.first_child; c < n.first_child + n.n_children; ++c)
        if (nodes[c].byte == uint8_t(text[j])) next = c;
      if (!next) break;
      node = next;
      if (nodes[node].n_tokens) {
        best = trie.token_ids()[nodes[node].first_token];
        best_len = j - i + 1;
      }
    }
    if (best < 0) return {};
    out.push_back(best);
    i += best_len;
  }
  return out;
}

const Setup& setup(const std::string& name) {
  static std::map<std::string, Setup> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Setup& s = cache[name];
  try {
    std::string path = std::string(TZ_SHARED_DATA) + "/vocab/" + name;
    if (name == "qwen2-hf") {
      const std::string out =
          (std::filesystem::temp_directory_path() / "tz-bench-qwen2.gguf").string();
      tzero::import_hf_tokenizer(path, out, {"qwen2"});
      path = out;
    }
    s.file = std::make_unique<tzero::GgufFile>(path);
    s.vocab = std::make_unique<tzero::Vocab>(tzero::Vocab::from_gguf(*s.file));
    s.trie = std::make_shared<const tzero::TokenTrie>(*s.vocab);
    s.grammar = std::make_shared<const tzero::Grammar>(
        tzero::compile_gbnf(tzero::json_schema_to_gbnf(kSchema)));
    s.first = longest_match(*s.trie, std::string("[") + kRecord);
    s.record = longest_match(*s.trie, std::string(", ") + kRecord);
    if (s.first.empty() || s.record.empty()) s.error = "no tokenization of the record";
  } catch (const std::exception& e) {
    s.error = std::string(name) + ": " + e.what();
  }
  return s;
}

bool walk(benchmark::State& state, tzero::TokenConstraint& c, const std::vector<int32_t>& tokens) {
  for (const int32_t t : tokens) {
    const std::vector<uint64_t>& mask = c.allowed();
    if (!((mask[size_t(t) / 64] >> (t % 64)) & 1)) {
      state.SkipWithError("a record token is not allowed");
      return false;
    }
    c.accept(t);
  }
  return true;
}

void BM_GrammarMask(benchmark::State& state, const std::string& vocab, bool cached) {
  const Setup& s = setup(vocab);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const std::vector<int32_t> ends{s.vocab->eos()};
  size_t tokens = 0;
  if (cached) {
    tzero::TokenConstraint c(s.grammar, s.trie, ends);
    if (!walk(state, c, s.first) || !walk(state, c, s.record)) return;  // every state met once
    for (auto _ : state) {
      if (!walk(state, c, s.record)) return;
      tokens += s.record.size();
    }
  } else {
    for (auto _ : state) {
      tzero::TokenConstraint c(s.grammar, s.trie, ends);
      if (!walk(state, c, s.first)) return;
      tokens += s.first.size();
    }
  }
  state.counters["tokens"] = double(cached ? s.record.size() : s.first.size());
  state.counters["per_token"] = benchmark::Counter(  // seconds per token, shown as "313us"
      double(tokens), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["n_vocab"] = s.trie->n_vocab();
}

BENCHMARK_CAPTURE(BM_GrammarMask, llama_spm_32k_cold, "ggml-vocab-llama-spm.gguf", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, llama_spm_32k_cached, "ggml-vocab-llama-spm.gguf", true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GrammarMask, gpt2_50k_cold, "ggml-vocab-gpt-2.gguf", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, gpt2_50k_cached, "ggml-vocab-gpt-2.gguf", true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GrammarMask, qwen2_152k_cold, "qwen2-hf", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GrammarMask, qwen2_152k_cached, "qwen2-hf", true)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
