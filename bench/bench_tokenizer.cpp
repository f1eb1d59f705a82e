// Tokenizer speed: tokenizing ../shared/data/text/tinyshakespeare.txt (1.1 MB) whole, with and
// without special-token parsing, for the gpt-2 (byte-level BPE) and llama-spm (SentencePiece)
// vocabularies, and decoding the ids back. "bytes/s" is text bytes per second; "tokens" the
// number of ids. Run: build-bench/bench/tz_bench_tokenizer [--benchmark_filter=...].
// Missing shared data: the benchmark reports an error instead of a number.
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "format/gguf.h"
#include "tokenizer/vocab.h"

namespace {

std::string shared(const std::string& rel) {
  return std::string(TZ_SHARED_DATA) + "/" + rel;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Loaded {
  std::unique_ptr<tzero::GgufFile> file;
  std::unique_ptr<tzero::Vocab> vocab;
};

// The vocabulary (loaded once per process), or nullptr with an error set on `state`.
const tzero::Vocab* vocab(benchmark::State& state, const std::string& name) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    Loaded l;
    try {
      l.file = std::make_unique<tzero::GgufFile>(shared("vocab/ggml-vocab-" + name + ".gguf"));
      l.vocab = std::make_unique<tzero::Vocab>(tzero::Vocab::from_gguf(*l.file));
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return nullptr;
    }
    it = cache.emplace(name, std::move(l)).first;
  }
  return it->second.vocab.get();
}

const std::string& text() {
  static const std::string t = read(shared("text/tinyshakespeare.txt"));
  return t;
}

void BM_Tokenize(benchmark::State& state, const std::string& name, bool parse_special) {
  const tzero::Vocab* v = vocab(state, name);
  if (!v) return;
  if (text().empty()) return state.SkipWithError("shared data absent: text/tinyshakespeare.txt");
  size_t n = 0;
  for (auto _ : state) {
    const auto ids = v->tokenize(text(), false, parse_special);
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text().size()));
  state.counters["tokens"] = double(n);
}

void BM_Detokenize(benchmark::State& state, const std::string& name) {
  const tzero::Vocab* v = vocab(state, name);
  if (!v) return;
  if (text().empty()) return state.SkipWithError("shared data absent: text/tinyshakespeare.txt");
  const auto ids = v->tokenize(text(), false, false);
  for (auto _ : state) {
    const std::string s = v->detokenize(ids);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text().size()));
}

BENCHMARK_CAPTURE(BM_Tokenize, gpt2_plain, "gpt-2", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, gpt2_parse_special, "gpt-2", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, llama_spm_plain, "llama-spm", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, llama_spm_parse_special, "llama-spm", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Detokenize, gpt2, "gpt-2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Detokenize, llama_spm, "llama-spm")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
