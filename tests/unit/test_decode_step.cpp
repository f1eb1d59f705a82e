// The decode step (src/runtime/decode_step.h): the stop rules in their order, the text it
// streams (UTF-8-safe, stop strings held back and cut), the digest over every row, and the
// edge spellings of the public enums (include/tzero/types.h).
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "base/hash.h"
#include "format/gguf.h"
#include "runtime/decode_step.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"

namespace tzero {
namespace {

// The synthetic vocabulary of gen-model (512 tokens): 1 <s>, 2 </s>, 3 + b the byte b,
// 259 "▁the", 260 "▁and", 261 "▁to"; tiny-eot also has EOT = 260.
constexpr int kVocab = 512;
constexpr int32_t kThe = 259, kAnd = 260, kTo = 261;

// The preset's vocabulary (kept with its file, which it may point into).
const Vocab& vocab_of(const std::string& preset) {
  struct Loaded {
    explicit Loaded(const std::string& path) : file(path), vocab(Vocab::from_gguf(file)) {}
    GgufFile file;
    Vocab vocab;
  };
  static std::map<std::string, std::unique_ptr<Loaded>> loaded;
  auto& l = loaded[preset];
  if (!l) l = std::make_unique<Loaded>(test::generated_model(preset, "f32"));
  return l->vocab;
}

// A logits row whose argmax is `token`.
std::vector<float> row_for(int32_t token) {
  std::vector<float> r(kVocab, 0.0f);
  r[size_t(token)] = 1.0f;
  return r;
}

struct Driven {
  std::vector<int32_t> tokens;
  std::string text;
  StopReason stop = StopReason::none;
};

// Steps through `script` (the token each row makes greedy decoding choose) until a stop.
Driven drive(DecodeStep& d, const std::vector<int32_t>& script) {
  Driven out;
  for (int32_t t : script) {
    const StepResult r = d.step(row_for(t).data(), kVocab);
    out.tokens.push_back(r.token);
    out.text += r.text + r.tail;
    if (r.stop != StopReason::none) {
      out.stop = r.stop;
      break;
    }
  }
  return out;
}

// Proves: EOS stops and is reported as the last token, its text is not streamed; EOT stops
// too (after EOS in the order); ignore_eos turns both off, a stop token still stops.
TEST(DecodeStep, EosEotAndStopTokens) {
  const Vocab& tiny = vocab_of("tiny");
  const Vocab& eot = vocab_of("tiny-eot");
  ASSERT_EQ(eot.eot(), kAnd);
  {
    DecodeStep d(tiny, {}, {}, {1});
    const Driven r = drive(d, {kThe, 2, kTo});
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{kThe, 2}));
    EXPECT_EQ(r.stop, StopReason::eos);
    EXPECT_EQ(r.text, "the");  // the SentencePiece space after BOS dropped
  }
  {
    DecodeStep d(eot, {}, {}, {1});
    const Driven r = drive(d, {kThe, kAnd, kTo});
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{kThe, kAnd}));
    EXPECT_EQ(r.stop, StopReason::eot);
    EXPECT_EQ(r.text, "the");
  }
  {
    StopRules rules;
    rules.ignore_eos = true;
    rules.stop_tokens = {kTo};
    DecodeStep d(eot, {}, rules, {1});
    const Driven r = drive(d, {kThe, kAnd, 2, kTo, kThe});
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{kThe, kAnd, 2, kTo}));
    EXPECT_EQ(r.stop, StopReason::stop_token);
    EXPECT_EQ(r.text, "the and");
  }
}

// Proves: a stop string is cut out even when it spans tokens; text that may still become one
// is held back and released at the end when it did not (max_tokens here).
TEST(DecodeStep, StopStringsAndHeldBackText) {
  const Vocab& v = vocab_of("tiny");
  {
    StopRules rules;
    rules.stop = {" and t"};
    DecodeStep d(v, {}, rules, {1});
    const Driven r = drive(d, {kThe, kAnd, kTo, kThe});
    EXPECT_EQ(r.tokens, (std::vector<int32_t>{kThe, kAnd, kTo}));
    EXPECT_EQ(r.stop, StopReason::stop_string);
    EXPECT_EQ(r.text, "the");
  }
  {
    StopRules rules;
    rules.stop = {" to be"};
    rules.max_tokens = 2;
    DecodeStep d(v, {}, rules, {1});
    const StepResult a = d.step(row_for(kThe).data(), kVocab);
    EXPECT_EQ(a.text, "the");
    const StepResult b = d.step(row_for(kTo).data(), kVocab);
    EXPECT_EQ(b.text, "");  // " to" could still become " to be"
    EXPECT_EQ(b.stop, StopReason::max_tokens);
    EXPECT_EQ(b.tail, " to");
  }
  {
    // A multi-byte character from byte tokens comes out whole, once complete.
    DecodeStep d(v, {}, {}, {1});
    EXPECT_EQ(d.step(row_for(3 + 0xE2).data(), kVocab).text, "");
    EXPECT_EQ(d.step(row_for(3 + 0x96).data(), kVocab).text, "");
    EXPECT_EQ(d.step(row_for(3 + 0x81).data(), kVocab).text, "\xE2\x96\x81");
  }
}

// Proves: max_tokens comes before the context; a full context stops with the token that has
// no position left still reported; the digest is XXH3-128 over every row stepped.
TEST(DecodeStep, LengthContextAndDigest) {
  const Vocab& v = vocab_of("tiny");
  StopRules rules;
  rules.n_ctx = 3;  // prompt of 1: the 3rd token would need position 3
  DecodeStep d(v, {}, rules, {1});
  const Driven r = drive(d, {kThe, kTo, kThe, kTo});
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kThe, kTo, kThe}));
  EXPECT_EQ(r.stop, StopReason::context);
  EXPECT_EQ(d.tokens(), (std::vector<int32_t>{1, kThe, kTo, kThe}));
  Hasher128 h;
  for (int32_t t : {kThe, kTo, kThe}) h.update(row_for(t).data(), kVocab * sizeof(float));
  EXPECT_EQ(d.digest(), h.hex());
  rules.max_tokens = 3;
  DecodeStep both(v, {}, rules, {1});
  EXPECT_EQ(drive(both, {kThe, kTo, kThe}).stop, StopReason::max_tokens);
}

TEST(PublicTypes, EdgeSpellings) {
  for (Mode m : {Mode::deterministic, Mode::fast, Mode::portable})
    EXPECT_EQ(parse_mode(to_string(m)), m);
  EXPECT_FALSE(parse_mode("Fast").has_value());
  EXPECT_STREQ(to_string(StopReason::max_tokens), "length");
  EXPECT_STREQ(to_string(StopReason::eot), "eot");
  EXPECT_EQ(finish_reason_of(StopReason::eot), FinishReason::stop);
  EXPECT_EQ(finish_reason_of(StopReason::stop_string), FinishReason::stop);
  EXPECT_EQ(finish_reason_of(StopReason::context), FinishReason::length);
  EXPECT_STREQ(to_string(finish_reason_of(StopReason::cancelled)), "cancelled");
}

}  // namespace
}  // namespace tzero

namespace tzero {
namespace {

struct ResumeRun {
  std::vector<int32_t> tokens;
  std::vector<std::string> text;  // per step
  std::string tail;               // released at the stop
  StopReason stop = StopReason::none;
  std::string digest;
};

// rows[i] is the row of the i-th generated token; resumed: the first n_resumed of `earlier`
// are replayed (with their rows) before stepping.
ResumeRun run_rows(const Vocab& v, const SamplingParams& sp, const StopRules& rules,
                   const std::vector<std::vector<float>>& rows, const std::vector<int32_t>& earlier,
                   int n_resumed) {
  std::vector<int32_t> prompt = {1, kThe};
  prompt.insert(prompt.end(), earlier.begin(), earlier.begin() + n_resumed);
  DecodeStep d(v, sp, rules, prompt, 0, n_resumed);
  ResumeRun out;
  size_t i = 0;
  for (; d.replaying(); ++i) {
    const StepResult r = d.replay(rows[i].data(), kVocab);
    EXPECT_TRUE(r.text.empty());
    out.tail += r.tail;
  }
  EXPECT_EQ(d.n_prompt(), 2);
  EXPECT_EQ(d.n_generated(), n_resumed);
  for (; !d.done() && i < rows.size(); ++i) {
    const StepResult r = d.step(rows[i].data(), kVocab);
    out.tokens.push_back(r.token);
    out.text.push_back(r.text);
    out.tail += r.tail;
  }
  out.stop = d.stop_reason();
  out.digest = d.digest();
  return out;
}

// Proves: a decode step resumed from the first k tokens of a run (replayed with their rows)
// samples, streams, stops and digests exactly as the rest of the uninterrupted run, for every
// k, greedy and seeded with penalties, with and without a stop string; without the step offset
// (the tokens as plain prompt) seeded sampling differs.
TEST(DecodeStep, ResumedIsTheRestOfTheUninterruptedRun) {
  const Vocab& v = vocab_of("tiny");
  std::vector<std::vector<float>> rows;
  for (uint32_t i = 0; i < 40; ++i) rows.push_back(test::random_floats(kVocab, 100 + i, 2.0f));
  SamplingParams seeded;
  seeded.temperature = 1.0f;
  seeded.seed = 7;
  seeded.top_p = 0.95f;
  seeded.presence_penalty = 0.5f;
  seeded.frequency_penalty = 0.3f;
  seeded.repetition_penalty = 1.3f;
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.repetition_penalty = 1.5f;  // the penalty makes greedy depend on what is output
  for (const SamplingParams& sp : {greedy, seeded}) {
    StopRules rules;
    rules.max_tokens = 30;
    rules.ignore_eos = true;
    const ResumeRun plain = run_rows(v, sp, rules, rows, {}, 0);
    std::string all;
    for (const auto& t : plain.text) all += t;
    all += plain.tail;
    std::vector<StopRules> variants = {rules};
    if (all.size() > 8) {
      StopRules with_stop = rules;
      with_stop.stop = {all.substr(all.size() / 2, 2)};
      variants.push_back(with_stop);
    }
    for (const StopRules& r : variants) {
      const ResumeRun ref = run_rows(v, sp, r, rows, {}, 0);
      ASSERT_GE(ref.tokens.size(), 3u);
      if (!r.stop.empty()) {
        EXPECT_EQ(ref.stop, StopReason::stop_string);
      }
      for (int k = 1; k <= int(ref.tokens.size()); ++k) {
        const ResumeRun res = run_rows(v, sp, r, rows, ref.tokens, k);
        EXPECT_EQ(res.tokens, std::vector<int32_t>(ref.tokens.begin() + k, ref.tokens.end()))
            << "k=" << k;
        std::string want, got;
        for (size_t i = size_t(k); i < ref.text.size(); ++i) want += ref.text[i];
        for (const auto& t : res.text) got += t;
        want += ref.tail;
        got += res.tail;
        EXPECT_EQ(got, want) << "k=" << k;
        EXPECT_EQ(res.stop, ref.stop) << "k=" << k;
        EXPECT_EQ(res.digest, ref.digest) << "k=" << k;
      }
    }
  }
  // Without the resume: the same tokens as prompt restart the step index and count as prompt.
  StopRules rules;
  rules.max_tokens = 30;
  rules.ignore_eos = true;
  const ResumeRun ref = run_rows(v, seeded, rules, rows, {}, 0);
  std::vector<int32_t> prompt = {1, kThe};
  prompt.insert(prompt.end(), ref.tokens.begin(), ref.tokens.begin() + 10);
  DecodeStep d(v, seeded, rules, prompt);
  std::vector<int32_t> got;
  for (size_t i = 10; i < 20; ++i) got.push_back(d.step(rows[i].data(), kVocab).token);
  EXPECT_NE(got, std::vector<int32_t>(ref.tokens.begin() + 10, ref.tokens.begin() + 20));
}

}  // namespace
}  // namespace tzero
