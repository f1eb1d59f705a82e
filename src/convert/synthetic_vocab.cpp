// The synthetic SentencePiece-style vocabulary of generated models (convert/synthetic_vocab.h).
#include "convert/synthetic_vocab.h"

#include <cstdio>
#include <set>

#include "base/error.h"

namespace tzero {

SpmVocabData make_synthetic_spm_vocab(int n_vocab) {
  check(n_vocab >= 300, "a synthetic vocabulary needs at least 300 tokens");
  SpmVocabData v;
  std::set<std::string> seen;
  auto push = [&](const std::string& t, float score, int32_t type) {
    if (int(v.tokens.size()) >= n_vocab || !seen.insert(t).second) return;
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  push("<unk>", 0.0f, 2);
  push("<s>", 0.0f, 3);
  push("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    push(name, 0.0f, 6);
  }
  const std::string sp = "\xE2\x96\x81";  // "▁"
  float score = -1.0f;
  // Multi-character pieces get higher scores (merged first) the earlier they come.
  const char* words[] = {
      "the",   "and",   "to",     "of",    "a",     "in",     "is",    "it",    "that",   "was",
      "he",    "she",   "for",    "on",    "with",  "as",     "his",   "her",   "they",   "at",
      "be",    "this",  "from",   "have",  "or",    "by",     "one",   "had",   "not",    "but",
      "what",  "all",   "were",   "when",  "we",    "there",  "can",   "an",    "your",   "which",
      "their", "said",  "if",     "do",    "will",  "each",   "about", "how",   "up",     "out",
      "them",  "then",  "many",   "some",  "so",    "these",  "would", "other", "into",   "has",
      "more",  "two",   "like",   "him",   "see",   "time",   "could", "no",    "make",   "than",
      "first", "been",  "its",    "who",   "now",   "people", "my",    "made",  "over",   "did",
      "down",  "only",  "way",    "find",  "use",   "may",    "water", "long",  "little", "very",
      "after", "words", "called", "just",  "where", "most",   "know",  "day",   "play",   "once",
      "upon",  "girl",  "boy",    "happy", "big",   "dog",    "cat",   "sun",   "tree"};
  for (const char* word : words) push(sp + word, score -= 0.01f, 1);
  for (char c = 'a'; c <= 'z'; ++c) push(sp + c, score -= 0.01f, 1);
  for (const char* pair : {"th", "he", "in", "er", "an", "re", "on", "at", "en", "nd",
                           "ed", "es", "or", "te", "of", "it", "is", "ng", "ar", "al"})
    push(pair, score -= 0.01f, 1);
  push(sp, score -= 0.01f, 1);
  for (int c = 33; c < 127; ++c) push(std::string(1, char(c)), -100.0f, 1);
  for (int k = 0; int(v.tokens.size()) < n_vocab; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "%sw%06d", sp.c_str(), k);
    push(name, -200.0f - 0.001f * float(k), 1);
  }
  return v;
}

void write_spm_vocab(GgufWriter& w, const SpmVocabData& v) {
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", v.tokens);
  w.add_f32_array("tokenizer.ggml.scores", v.scores);
  w.add_i32_array("tokenizer.ggml.token_type", v.types);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace tzero
