// The batched engine (include/tzero/engine.h) on real model files: every request's tokens,
// logits digest and logprobs are bit-identical to its solo run, whatever the schedule (batch
// mates, arrival order, token budget, prefill chunk, KV block size, prefix cache, preemption).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <random>
#include <thread>

#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/generate.h"
#include "support/engine_output.h"
#include "support/test_support.h"
#include "tokenizer/vocab.h"
#include "tzero/engine.h"

using tzero::Engine;
using tzero::EngineOptions;
using tzero::RequestParams;
using tzero::TokenEvent;
using tzero::test::collect;
using tzero::test::expect_same;
using Output = tzero::test::EngineOutput;

namespace {

// Random requests over the model's vocabulary; half share a 21-token prefix, so the prefix
// cache has something to find.
std::vector<RequestParams> random_requests(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> shared(21);
  for (auto& t : shared) t = int32_t(rng() % uint32_t(n_vocab));
  std::vector<RequestParams> out;
  for (int i = 0; i < n; ++i) {
    RequestParams r;
    if (i % 2 == 0) r.prompt_tokens = shared;
    const int len = 1 + int(rng() % 40);
    for (int j = 0; j < len; ++j) r.prompt_tokens.push_back(int32_t(rng() % uint32_t(n_vocab)));
    r.max_tokens = 1 + int(rng() % 24);
    r.ignore_eos = i % 3 != 0;
    if (i % 2 == 1) {  // seeded sampling, some with filters and penalties
      r.sampling.temperature = 0.5f + float(rng() % 8) * 0.1f;
      r.sampling.seed = rng();
      if (i % 4 == 1) r.sampling.top_k = 1 + int(rng() % 40);
      if (i % 4 == 3) r.sampling.top_p = 0.9f;
      if (i % 5 == 1) r.sampling.repetition_penalty = 1.3f;
      if (i % 5 == 3) r.sampling.frequency_penalty = 0.4f;
    }
    r.sampling.logprobs = true;
    r.sampling.top_logprobs = i % 3;
    out.push_back(r);
  }
  return out;
}

// The engine options every test starts from: the model, a context of 128 positions.
EngineOptions options_for(const std::string& model) {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 128;
  return o;
}

std::vector<Output> run_solo(const std::string& model, const std::vector<RequestParams>& reqs,
                             const std::string& kv_type = "f32") {
  EngineOptions o = options_for(model);
  o.max_seqs = 1;
  o.prefix_cache = false;
  o.kv_type = kv_type;
  Engine e(o);
  std::vector<Output> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    e.submit(reqs[i], collect(out[i]));
    e.run_until_idle();
  }
  return out;
}

// Submits the requests in a shuffled order, a few at a time between steps (continuous
// arrival), and steps until all are done.
std::vector<Output> run_batched(const EngineOptions& o, const std::vector<RequestParams>& reqs,
                                uint32_t seed, tzero::EngineStats* stats = nullptr) {
  Engine e(o);
  std::vector<Output> out(reqs.size());
  std::vector<size_t> order(reqs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  size_t next = 0;
  while (next < order.size()) {
    const size_t burst = 1 + rng() % 4;
    for (size_t k = 0; k < burst && next < order.size(); ++k, ++next)
      e.submit(reqs[order[next]], collect(out[order[next]]));
    for (size_t k = rng() % 3; k > 0; --k) e.step();
  }
  e.run_until_idle();
  if (stats) *stats = e.stats();
  EXPECT_EQ(e.stats().kv_blocks_used, 0) << "blocks leaked";
  EXPECT_EQ(e.stats().running + e.stats().waiting, 0);
  return out;
}

}  // namespace

// Proves: a request through the engine, alone, gives exactly what `tzero run` (generate) gives:
// the same tokens and the same logits digest, greedy and seeded.
TEST(EngineBatching, SoloEqualsGenerate) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  for (float temp : {0.0f, 0.8f}) {
    tzero::GenerateOptions g;
    g.prompt = "Once upon a time";
    g.n_predict = 20;
    g.compute.n_ctx = 128;
    g.sampling.temperature = temp;
    g.sampling.seed = 42;
    auto m = tzero::Model::load(model);
    const tzero::Vocab vocab = tzero::Vocab::from_gguf(m->gguf());
    const tzero::GenerateResult want = tzero::generate(*m, vocab, g);

    EngineOptions o = options_for(model);
    Engine e(o);
    RequestParams r;
    r.prompt = g.prompt;
    r.max_tokens = 20;
    r.sampling.temperature = temp;
    r.sampling.seed = 42;
    Output got;
    e.submit(r, collect(got));
    e.run_until_idle();
    std::vector<int32_t> want_tokens = want.tokens;
    if (!want_tokens.empty() && want_tokens.back() == vocab.eos()) want_tokens.pop_back();
    std::vector<int32_t> got_tokens = got.tokens;
    if (!got_tokens.empty() && got_tokens.back() == vocab.eos()) got_tokens.pop_back();
    EXPECT_EQ(got_tokens, want_tokens) << "temperature " << temp;
    EXPECT_EQ(got.digest, want.logits_digest) << "temperature " << temp;
    EXPECT_EQ(got.text, want.text) << "temperature " << temp;
  }
}

// Proves: the property the batching issue asks for, over random schedules: 12 random requests
// (different lengths, arrival orders, seeds, temperatures, filters, penalties, logprobs) run
// under many token budgets, prefill chunks, block sizes, cache capacities and with the prefix
// cache on and off; every request's output equals its solo run bit for bit, and no KV block
// is left held at the end.
// Every request of a random load, over several schedules (token budgets, prefill chunks, block
// sizes, pool sizes, prefix cache), equals its solo run bit for bit. Returns the preemptions.
// With drafts (speculative decoding by prompt lookup, draft lengths 1 to 6 by schedule), the
// solo runs stay plain: drafts must not change a bit. stats_out: the schedules' summed counts.
uint64_t check_random_schedules(const std::string& model, size_t n_configs,
                                const std::vector<RequestParams>& reqs = random_requests(12, 512,
                                                                                         7),
                                bool drafts = false, tzero::EngineStats* stats_out = nullptr) {
  const std::vector<Output> solo = run_solo(model, reqs);
  struct Config {
    int budget, chunk, block, kv_tokens, max_seqs;
    bool prefix;
  };
  const Config configs[] = {
      {256, 0, 16, 0, 16, true},  {7, 0, 4, 0, 16, true},    {32, 5, 1, 0, 8, false},
      {64, 16, 16, 0, 3, true},   {13, 3, 8, 96, 16, true},  {256, 1, 2, 0, 16, true},
      {48, 0, 16, 96, 16, false}, {100, 0, 5, 90, 16, true},
  };
  uint32_t seed = 1;
  uint64_t preemptions = 0;
  for (size_t ci = 0; ci < std::min(n_configs, std::size(configs)); ++ci) {
    const Config& c = configs[ci];
    EngineOptions o = options_for(model);
    o.max_batch_tokens = c.budget;
    o.prefill_chunk = c.chunk;
    o.block_size = c.block;
    o.kv_tokens = c.kv_tokens;
    o.max_seqs = c.max_seqs;
    o.prefix_cache = c.prefix;
    if (drafts) {  // prompt lookup, and a draft model (another quantization) every other one
      o.spec_type = ci % 2 ? "draft" : "ngram-simple";
      if (ci % 2) o.draft_model = tzero::test::generated_model("tiny", "q4_k");
      o.draft_max = 1 + int(ci % 6);
    }
    tzero::EngineStats st;
    const std::vector<Output> got = run_batched(o, reqs, seed++, &st);
    preemptions += st.preemptions;
    if (stats_out) {
      stats_out->drafted_tokens += st.drafted_tokens;
      stats_out->accepted_tokens += st.accepted_tokens;
      stats_out->preemptions += st.preemptions;
    }
    for (size_t i = 0; i < reqs.size(); ++i)
      expect_same(solo[i], got[i],
                  model + ": request " + std::to_string(i) + " budget " + std::to_string(c.budget) +
                      " chunk " + std::to_string(c.chunk) + " block " + std::to_string(c.block) +
                      " kv " + std::to_string(c.kv_tokens));
  }
  return preemptions;
}

TEST(EngineBatching, RandomSchedulesEqualSoloRuns) {
  // The schedules really exercise preemption (small pools) too.
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny", "q8_0"), 8), 0u);
}

// Speculative decoding in the engine (prompt lookup and a draft model): every request of the
// random load, drafted for in every schedule (budgets that cut drafts, preemption, the prefix
// cache), equals its plain solo run bit for bit, logprobs included; greedy and seeded, with
// grammars.
TEST(EngineBatching, RandomSchedulesWithDraftsEqualPlainSoloRuns) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  std::vector<RequestParams> reqs = random_requests(12, 512, 7);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].max_tokens = 8 + int(i * 5 % 30);
    if (i % 5 == 2) reqs[i].grammar = "root ::= ( \"ab\" | \"cd\" )+";
  }
  tzero::EngineStats st;
  EXPECT_GT(check_random_schedules(model, 8, reqs, true, &st), 0u);
  std::printf("[ note ] drafted %llu, accepted %llu over 8 schedules\n",
              static_cast<unsigned long long>(st.drafted_tokens),
              static_cast<unsigned long long>(st.accepted_tokens));
  EXPECT_GT(st.drafted_tokens, 0u);
  EXPECT_GT(st.accepted_tokens, 0u);
  EXPECT_LT(st.accepted_tokens, st.drafted_tokens);
}

// Grammars (RequestParams::grammar): the mask is a function of the grammar state and the
// vocabulary, so constrained requests, seeded or greedy, keep their solo bits in any batch.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithGrammars) {
  std::vector<RequestParams> reqs = random_requests(12, 512, 11);
  const char* grammars[] = {
      "root ::= \"{\" ( [a-z]{1,6} \":\" [0-9]{1,4} ( \",\" [a-z]{1,6} \":\" [0-9]{1,4} )* )? "
      "\"}\"",
      "root ::= ( \"yes\" | \"no\" | \"maybe\" ) \".\"",
      "root ::= [^\\x00-\\x1f]{2,40}",
  };
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i % 4 == 3) continue;  // some stay free, sharing batches with constrained ones
    reqs[i].grammar = grammars[i % 3];
    reqs[i].max_tokens = 24;
  }
  check_random_schedules(tzero::test::generated_model("tiny", "q8_0"), 8, reqs);
  // And the grammars were applied: the choice requests wrote one of their three answers.
  const std::vector<Output> solo = run_solo(tzero::test::generated_model("tiny", "q8_0"), reqs);
  for (size_t i = 1; i < reqs.size(); i += 3) {
    if (i % 4 == 3) continue;
    EXPECT_TRUE(solo[i].text == "yes." || solo[i].text == "no." || solo[i].text == "maybe.")
        << i << ": " << solo[i].text;
  }
}

// Mixture of experts: batch mates choose some of the same experts and not others, so each
// expert's grouped product sees a batch that depends on every request; the bits may not.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithExperts) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-qwen3moe", "q4_k"), 5), 0u);
  check_random_schedules(tzero::test::generated_model("tiny-mixtral", "q8_0"), 3);
  check_random_schedules(tzero::test::generated_model("tiny-qwen2moe", "f16"), 2);
}

// Sliding windows (gemma3: 12 positions on 5 of 6 layers): each token's window starts at its
// own position, inside a block or across blocks of any size, in a chunk or a batch with others;
// preemption, recomputation and prefix-cache hits restore the same windows.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithSlidingWindows) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-gemma3", "q8_0"), 8), 0u);
  // gemma2: windows on every other layer, soft-capped scores and logits.
  check_random_schedules(tzero::test::generated_model("tiny-gemma2", "q4_k"), 4);
}

// gpt-oss: windows of 8 on the even layers, attention sinks, experts with biases chosen by
// their logits (SoftmaxWeight), clamped SwiGLU: batch mates, chunks, prefix-cache hits and
// preemption change no bit.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithGptOss) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-gpt-oss", "mxfp4"), 6), 0u);
  check_random_schedules(tzero::test::generated_model("tiny-gpt-oss", "q8_0"), 3);
}

// glm4moe: a dense first layer, then sigmoid-routed experts (bias for the choice, weights
// renormalised and scaled) with an ungated shared expert; partial neox rotary.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithGlm4Moe) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-glm4moe", "q4_k"), 5), 0u);
}

// deepseek2: MLA in its one (absorbed) form for prefill, decode and every batch, over a
// key-only paged cache (the value is each key row's latent); grouped sigmoid routing. Chunks,
// batch mates, prefix-cache hits and preemption change no bit.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithDeepSeek2) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-deepseek2", "q8_0"), 6), 0u);
  check_random_schedules(tzero::test::generated_model("tiny-deepseek2", "f16"), 3);
}

// The Gated DeltaNet hybrids: each sequence's recurrent state (a state slot beside its blocks)
// advances token by token in one order however its prompt is chunked, whatever shares the
// batch; preemption recomputes it from position 0 (their prefix cache is off).
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithDeltaNet) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-qwen3next", "q8_0"), 6), 0u);
  check_random_schedules(tzero::test::generated_model("tiny-qwen35", "q4_k"), 4);
  check_random_schedules(tzero::test::generated_model("tiny-qwen35moe", "f16"), 3);
}

void check_prefix_cache_hits(const std::string& model);

// nemotron_h: Mamba-2 states (scan and convolution with its bias) in the same slots, attention
// without rope, squared-ReLU MLPs; batch mates, chunks, preemption and prefix-cache snapshots.
TEST(EngineBatching, RandomSchedulesEqualSoloRunsWithMamba2) {
  EXPECT_GT(check_random_schedules(tzero::test::generated_model("tiny-nemotron-h", "q8_0"), 6), 0u);
  check_prefix_cache_hits(tzero::test::generated_model("tiny-nemotron-h", "f32"));
}

// Proves: a pool far too small for the load forces preemption and recomputation, and outputs
// still equal the solo runs; the pool's free count returns to full afterwards.
TEST(EngineBatching, TinyPoolPreemptsAndStillMatches) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const auto reqs = random_requests(8, 512, 11);
  const std::vector<Output> solo = run_solo(model, reqs);
  EngineOptions o = options_for(model);
  o.block_size = 4;
  o.kv_tokens = 88;  // one long request fits; eight do not
  o.max_batch_tokens = 64;
  tzero::EngineStats st;
  const std::vector<Output> got = run_batched(o, reqs, 5, &st);
  EXPECT_GT(st.preemptions, 0u);
  int preempted_requests = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    expect_same(solo[i], got[i], "request " + std::to_string(i));
    preempted_requests += got[i].n_preempted > 0;
  }
  EXPECT_GT(preempted_requests, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);
}

// Proves: the prefix cache is used (later requests report cached prompt tokens) and changes
// nothing: same bits as with the cache off.
void check_prefix_cache_hits(const std::string& model) {
  auto reqs = random_requests(6, 512, 3);
  for (auto& r : reqs) r.prompt_tokens.resize(std::min<size_t>(r.prompt_tokens.size(), 30));
  const std::vector<Output> solo = run_solo(model, reqs);
  EngineOptions o = options_for(model);
  o.block_size = 4;
  Engine e(o);
  std::vector<Output> got(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {  // one after another: earlier ones warm the cache
    e.submit(reqs[i], collect(got[i]));
    e.run_until_idle();
    expect_same(solo[i], got[i], "request " + std::to_string(i));
  }
  EXPECT_EQ(got[0].n_cached, 0);
  EXPECT_GE(got[2].n_cached, 20);  // the shared 21-token prefix, in whole blocks of 4
  uint64_t cached = 0;
  for (const Output& g : got) cached += uint64_t(g.n_cached);
  EXPECT_EQ(e.stats().cached_tokens, cached);  // what /metrics reports as cached tokens
  EXPECT_GT(e.stats().kv_blocks_cached, 0);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(EngineBatching, PrefixCacheHitsKeepTheBits) {
  check_prefix_cache_hits(tzero::test::generated_model("tiny", "q8_0"));
}

// A recurrent model's hits restore a snapshot of its state at the block boundary where the
// cached prefix ends (batch/state_snapshots.h): the bits of a recomputation.
TEST(EngineBatching, PrefixCacheHitsKeepTheBitsWithRecurrentState) {
  check_prefix_cache_hits(tzero::test::generated_model("tiny-qwen3next", "q8_0"));
  check_prefix_cache_hits(tzero::test::generated_model("tiny-qwen35", "f16"));
}

// Batches the requests over an F16 cache of 8-position blocks and checks each against its solo
// F16 run; returns the F16 options. Some request's F16 digest must differ from its F32 one.
EngineOptions check_f16_cache(const std::string& model, int n_requests, uint32_t req_seed,
                              uint32_t batch_seed) {
  const auto reqs = random_requests(n_requests, 512, req_seed);
  const std::vector<Output> solo16 = run_solo(model, reqs, "f16");
  const std::vector<Output> solo32 = run_solo(model, reqs, "f32");
  EngineOptions o = options_for(model);
  o.kv_type = "f16";
  o.block_size = 8;
  o.max_batch_tokens = 40;
  const std::vector<Output> got = run_batched(o, reqs, batch_seed);
  int differ = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    expect_same(solo16[i], got[i], "request " + std::to_string(i));
    differ += solo16[i].digest != solo32[i].digest;
  }
  EXPECT_GT(differ, 0);
  return o;
}

// Proves: F16 KV storage is batch-invariant too, and really changes the bits against F32
// (so the fingerprint must name it, and does).
TEST(EngineBatching, F16CacheIsInvariantAndNamed) {
  const EngineOptions o = check_f16_cache(tzero::test::generated_model("tiny", "f32"), 6, 9, 2);
  EngineOptions o32 = o;
  o32.kv_type = "f32";
  EXPECT_NE(Engine(o).info().fingerprint, Engine(o32).info().fingerprint);
}

// Proves: MLA's key-only cache (deepseek2: one latent + rope row per token, the values read from
// it) in F16 is batch-invariant too, differs from F32, and takes half the bytes per block of a
// key-and-value cache of the same row width.
TEST(EngineBatching, MlaKeyOnlyF16CacheIsInvariant) {
  const std::string model = tzero::test::generated_model("tiny-deepseek2", "f32");
  check_f16_cache(model, 5, 19, 3);
  const auto m = tzero::Model::load(model);
  tzero::HParams dense = m->hparams();
  dense.kv_lora_rank = 0;  // the same row width as a key-and-value cache
  EXPECT_EQ(2 * tzero::KvStore::bytes_per_block(m->hparams(), 16, tzero::KvType::F16),
            tzero::KvStore::bytes_per_block(dense, 16, tzero::KvType::F16));
}

// Proves: cancelling waiting and running requests delivers one "cancelled" final event each,
// leaves the others' outputs untouched, and frees every block.
TEST(EngineBatching, CancelFreesBlocksAndSparesOthers) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  auto reqs = random_requests(6, 512, 21);
  for (auto& r : reqs) r.max_tokens = 20, r.ignore_eos = true;
  const std::vector<Output> solo = run_solo(model, reqs);
  EngineOptions o = options_for(model);
  o.max_seqs = 3;  // some wait while others run
  Engine e(o);
  std::vector<Output> got(reqs.size());
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < reqs.size(); ++i) ids.push_back(e.submit(reqs[i], collect(got[i])));
  e.step();
  e.step();
  e.cancel(ids[1]);  // running
  e.cancel(ids[5]);  // still waiting
  e.cancel(999999);  // unknown: ignored
  e.run_until_idle();
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(got[i].n_final, 1) << i;
    if (i == 1 || i == 5)
      EXPECT_EQ(got[i].reason, "cancelled") << i;
    else
      expect_same(solo[i], got[i], "request " + std::to_string(i));
  }
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  EXPECT_EQ(e.stats().requests_cancelled, 2u);
}

// Proves: requests submitted from several threads to the background stepping thread get their
// solo bits; stop() ends cleanly.
TEST(EngineBatching, BackgroundThreadServesConcurrentSubmitters) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  const auto reqs = random_requests(8, 512, 17);
  const std::vector<Output> solo = run_solo(model, reqs);
  EngineOptions o = options_for(model);
  o.n_threads = 2;
  Engine e(o);
  e.start();
  std::vector<Output> got(reqs.size());
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::thread> clients;
  for (size_t i = 0; i < reqs.size(); ++i)
    clients.emplace_back([&, i] {
      auto inner = collect(got[i]);
      e.submit(reqs[i], [&, inner](const TokenEvent& ev) {
        inner(ev);
        if (ev.finished) {
          std::lock_guard<std::mutex> lock(mu);
          ++done;
          cv.notify_all();
        }
      });
    });
  for (auto& t : clients) t.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done == 8; }));
  }
  e.stop();
  for (size_t i = 0; i < reqs.size(); ++i) expect_same(solo[i], got[i], std::to_string(i));
}

// Proves: bad requests are refused with a message naming the problem, and nothing is queued;
// a full queue refuses with QueueFull.
TEST(EngineBatching, RefusesBadRequestsAndFullQueue) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.max_queue = 2;
  o.max_seqs = 1;  // one request runs, two may wait
  Engine e(o);
  auto refused = [&](RequestParams r, const std::string& needle) {
    try {
      e.submit(r, nullptr);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const tzero::RequestError& err) {
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  RequestParams r;
  r.prompt_tokens.assign(65, 1);
  refused(r, "longer than the context");
  r.prompt_tokens = {1, 2, 600};
  refused(r, "outside the vocabulary");
  r.prompt_tokens = {1, 2};
  r.max_tokens = 0;
  refused(r, "max_tokens");
  r.max_tokens = 4;
  r.sampling.top_p = 0;
  refused(r, "top_p");
  r.sampling.top_p = 1;
  r.sampling.temperature = -1;
  refused(r, "temperature");
  r.sampling.temperature = 0;
  r.sampling.top_logprobs = 21;
  refused(r, "top_logprobs");
  r.sampling.top_logprobs = 0;
  EXPECT_EQ(e.stats().waiting, 0);
  e.submit(r, nullptr);
  e.submit(r, nullptr);
  e.submit(r, nullptr);
  EXPECT_THROW(e.submit(r, nullptr), tzero::QueueFull);
  e.run_until_idle();
  EXPECT_NO_THROW(e.submit(r, nullptr));
  e.run_until_idle();
}

// Proves: a stop string ends generation and is cut from the text, which is then exactly the
// unstopped run's text up to the stop string.
TEST(EngineBatching, StopStringCutsTheText) {
  TZ_REQUIRE_SHARED(model, "gguf/stories260K.gguf");
  EngineOptions o;
  o.model_path = model;
  Engine e(o);
  RequestParams r;
  r.prompt = "Once upon a time";
  r.max_tokens = 60;
  Output full;
  e.submit(r, collect(full));
  e.run_until_idle();
  ASSERT_GT(full.text.size(), 40u);
  const std::string stop = full.text.substr(20, 5);
  r.stop = {stop};
  Output cut;
  e.submit(r, collect(cut));
  e.run_until_idle();
  EXPECT_EQ(cut.reason, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_LT(cut.tokens.size(), full.tokens.size());
}

// Proves: the KV pool's capacity can be given in bytes (tiny model: 2 layers x 2 x 128 floats
// = 2 KiB per position in F32, 1 KiB in F16), and a capacity too small for one position is an
// error naming the sizes.
TEST(EngineBatching, KvCapacityInBytes) {
  const std::string model = tzero::test::generated_model("tiny", "q8_0");
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.block_size = 16;
  o.kv_bytes = 2048 * 160;  // 160 positions: 10 blocks
  EXPECT_EQ(Engine(o).stats().kv_blocks_total, 10);
  o.kv_type = "f16";
  EXPECT_EQ(Engine(o).stats().kv_blocks_total, 20);
  o.kv_bytes = 100;
  try {
    Engine e(o);
    ADD_FAILURE() << "accepted a 100-byte cache";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find("holds no position"), std::string::npos) << err.what();
  }
}
