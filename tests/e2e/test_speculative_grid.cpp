// Speculative decoding's property grid (runtime/speculative.h, docs/DETERMINISM.md "L3
// speculation"): for every weight type, every draft length 1..8, greedy and seeded requests
// that share each pass (batch mates in the engine), and drafts that always agree (the target as
// its own draft), sometimes agree (another quantization of the same weights), rarely agree
// (other weights) and prompt lookup, every request's tokens, text, logprobs and logits digest
// equal its plain solo run, bit for bit.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "support/engine_output.h"
#include "support/test_support.h"
#include "tzero/engine.h"

using tzero::test::EngineOutput;

namespace {

// Four requests over the tiny presets' 512-token vocabulary: greedy and seeded (with a top-k
// filter and a penalty), two of them repeating themselves so that prompt lookup finds drafts.
std::vector<tzero::RequestParams> grid_requests() {
  std::mt19937 rng(3);
  std::vector<tzero::RequestParams> out;
  for (int i = 0; i < 4; ++i) {
    tzero::RequestParams r;
    std::vector<int32_t> phrase(3 + size_t(i));
    for (auto& t : phrase) t = int32_t(rng() % 512);
    for (int rep = 0; rep < (i % 2 ? 1 : 4); ++rep)
      r.prompt_tokens.insert(r.prompt_tokens.end(), phrase.begin(), phrase.end());
    r.max_tokens = 14 + i;
    r.ignore_eos = true;
    if (i >= 2) {
      r.sampling.temperature = 0.9f;
      r.sampling.seed = 100 + uint64_t(i);
      r.sampling.top_k = i == 3 ? 40 : 0;
      r.sampling.repetition_penalty = i == 3 ? 1.2f : 1.0f;
    }
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = 2;
    out.push_back(r);
  }
  return out;
}

// The requests submitted together (batch mates in every pass) and run to the end.
std::vector<EngineOutput> run_all(const tzero::EngineOptions& o,
                                  const std::vector<tzero::RequestParams>& reqs) {
  tzero::Engine e(o);
  std::vector<EngineOutput> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) e.submit(reqs[i], tzero::test::collect(out[i]));
  e.run_until_idle();
  return out;
}

}  // namespace

TEST(SpeculativeGrid, EveryWeightTypeDraftLengthAndDraftGivesPlainBits) {
  struct Type {
    const char *dtype, *other_quant;  // the target's type, and its "sometimes agrees" draft's
  };
  const Type types[] = {
      {"f32", "q8_0"},  {"f16", "bf16"},      {"bf16", "f16"},    {"q8_0", "q4_0"},
      {"q4_0", "q8_0"}, {"q4_1", "q5_1"},     {"q5_0", "q4_0"},   {"q5_1", "q8_0"},
      {"q2_k", "q3_k"}, {"q3_k", "q4_k"},     {"q4_k", "q5_k"},   {"q5_k", "q6_k"},
      {"q6_k", "q8_0"}, {"iq4_nl", "iq4_xs"}, {"iq4_xs", "q4_k"}, {"mxfp4", "q4_0"},
  };
  const std::vector<tzero::RequestParams> reqs = grid_requests();
  struct Totals {
    long drafted = 0, accepted = 0;
  } self_greedy, other_quant, other_weights, lookup;
  for (const Type& t : types) {
    const std::string model = tzero::test::generated_model("tiny", t.dtype);
    tzero::EngineOptions o;
    o.model_path = model;
    o.n_ctx = 96;
    o.max_seqs = 1;
    std::vector<EngineOutput> plain;
    for (const tzero::RequestParams& r : reqs) plain.push_back(run_all(o, {r})[0]);
    o.max_seqs = 4;
    struct Draft {
      const char* name;
      std::string spec_type, file;
      Totals* totals;
    };
    const Draft drafts[] = {
        {"itself", "draft", model, &self_greedy},
        {"another quantization", "draft", tzero::test::generated_model("tiny", t.other_quant),
         &other_quant},
        {"other weights", "draft", tzero::test::generated_model("tiny", t.dtype, 7),
         &other_weights},
        {"prompt lookup", "ngram-simple", "", &lookup},
    };
    for (const Draft& d : drafts)
      for (int k = 1; k <= 8; ++k) {
        o.spec_type = d.spec_type;
        o.draft_model = d.file;
        o.draft_max = k;
        const std::vector<EngineOutput> got = run_all(o, reqs);
        for (size_t i = 0; i < reqs.size(); ++i) {
          const std::string what = std::string(t.dtype) + ", drafts by " + d.name + ", k " +
                                   std::to_string(k) + ", request " + std::to_string(i);
          tzero::test::expect_same(plain[i], got[i], what);
          EXPECT_LE(got[i].n_accepted, got[i].n_drafted) << what;
          const bool greedy = reqs[i].sampling.temperature == 0;
          if (d.totals == &self_greedy && !greedy) continue;  // seeded: the greedy draft may miss
          if (d.totals == &self_greedy) {
            EXPECT_EQ(got[i].n_accepted, got[i].n_drafted) << what;
          }
          d.totals->drafted += got[i].n_drafted;
          d.totals->accepted += got[i].n_accepted;
        }
      }
  }
  for (const auto& [name, tot] :
       {std::pair{"itself (greedy)", self_greedy}, std::pair{"another quantization", other_quant},
        std::pair{"other weights", other_weights}, std::pair{"prompt lookup", lookup}})
    std::printf("[ note ] drafts by %s: %ld of %ld accepted\n", name, tot.accepted, tot.drafted);
  // Each kind of draft was exercised, and the "sometimes" drafts both agreed and missed.
  EXPECT_GT(self_greedy.drafted, 0);
  EXPECT_GT(other_quant.accepted, 0);
  EXPECT_LT(other_quant.accepted, other_quant.drafted);
  EXPECT_LT(other_weights.accepted, other_weights.drafted);
  EXPECT_GT(lookup.drafted, 0);
}
