// libFuzzer target for the tokenizers: arbitrary bytes are encoded and decoded with every
// vocabulary at hand (llama-spm and gpt-2 from ../shared/data when present, and gen-model's
// synthetic SentencePiece vocabulary always). Besides crashes and sanitizer errors it checks the
// round trip documented in tokenizer/vocab.h: detokenize(tokenize(t)) == t for any bytes t
// (these vocabularies do not normalize), and aborts with the input when it does not hold. One
// exception, as in SentencePiece itself: a text that already contains U+2581 "▁" (the
// SentencePiece space mark) decodes with a space there, so it is skipped for those vocabularies.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "convert/synthetic_vocab.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace {

struct Loaded {
  std::unique_ptr<tzero::GgufFile> file;  // the vocabulary's strings live in its mapping
  std::unique_ptr<tzero::Vocab> vocab;
  std::string name;
};
std::vector<Loaded>* vocabs;

void load(const std::string& path, const std::string& name) {
  if (!std::filesystem::exists(path)) return;
  Loaded l;
  l.file = std::make_unique<tzero::GgufFile>(path);
  l.vocab = std::make_unique<tzero::Vocab>(tzero::Vocab::from_gguf(*l.file));
  l.name = name;
  vocabs->push_back(std::move(l));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  vocabs = new std::vector<Loaded>();
  const std::string shared = TZ_SHARED_DATA;
  load(shared + "/vocab/ggml-vocab-llama-spm.gguf", "llama-spm");
  load(shared + "/vocab/ggml-vocab-gpt-2.gguf", "gpt-2");
  // The synthetic vocabulary, written once to a temporary file.
  const tzero::SpmVocabData s = tzero::make_synthetic_spm_vocab(512);
  tzero::GgufWriter w;
  tzero::write_spm_vocab(w, s);
  const std::string path =
      (std::filesystem::temp_directory_path() / "tz_fuzz_synthetic_vocab.gguf").string();
  w.write(path);
  load(path, "synthetic-spm");
  std::fprintf(stderr, "tokenizer fuzz: %zu vocabularies\n", vocabs->size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const Loaded& l : *vocabs) {
    const std::vector<int32_t> ids = l.vocab->tokenize(text, false, false);
    for (int32_t id : ids)
      if (id < 0 || id >= l.vocab->n_tokens()) {
        std::fprintf(stderr, "%s: token id %d out of range\n", l.name.c_str(), id);
        std::abort();
      }
    const bool spm_mark = l.vocab->kind() == tzero::Vocab::Kind::Spm &&
                          text.find("\xE2\x96\x81") != std::string::npos;
    if (!spm_mark && l.vocab->detokenize(ids) != text) {
      std::fprintf(stderr, "%s: decode(encode(text)) != text\n", l.name.c_str());
      std::abort();
    }
    const std::vector<int32_t> special = l.vocab->tokenize(text, true, true);
    (void)l.vocab->detokenize(special, true);
  }
  return 0;
}
