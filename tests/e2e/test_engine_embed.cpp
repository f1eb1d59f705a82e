// Embeddings and prompt scoring through the batched engine (include/tzero/engine.h): an input's
// embedding, and a prompt's token logprobs, are the same bits alone or among 64 other requests
// (embedding, generation and scoring mixed), at any token budget, prefill chunk, KV block size,
// with preemption; and they are what the single-sequence forward pass gives (the final norm of
// each position, pooled in position order by pool-v1; the logits row before each token by
// logprob-v1). Every comparison is of bits (memcmp), not a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/backends.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/sampler.h"
#include "support/test_support.h"
#include "tzero/engine.h"

using tzero::Engine;
using tzero::EngineOptions;
using tzero::Pooling;
using tzero::RequestParams;
using tzero::TokenEvent;

namespace {

// What one request returned.
struct Result {
  std::vector<float> embedding;
  std::vector<int32_t> prompt_tokens;  // scored prompt tokens, in order
  std::vector<float> prompt_logprobs;
  std::vector<int> ranks;
  std::vector<std::vector<tzero::TokenLogprob>> prompt_top;
  std::vector<int32_t> tokens;  // generated
  std::vector<float> logprobs;
  std::string digest, reason;
  int n_final = 0, n_preempted = 0, n_cached = 0;
  bool prompt_after_generated = false;  // a prompt event came after a generated one
};

tzero::TokenCallback collect(Result& r) {
  return [&r](const TokenEvent& e) {
    if (e.finished) {
      ++r.n_final;
      r.embedding = e.embedding;
      r.digest = e.logits_digest;
      r.reason = tzero::to_string(e.finish_reason);
      r.n_preempted = e.n_preempted;
      r.n_cached = e.n_cached;
    } else if (e.prompt) {
      if (!r.tokens.empty()) r.prompt_after_generated = true;
      r.prompt_tokens.push_back(e.token);
      r.prompt_logprobs.push_back(e.logprob);
      r.ranks.push_back(e.rank);
      r.prompt_top.push_back(e.top);
    } else {
      r.tokens.push_back(e.token);
      r.logprobs.push_back(e.logprob);
    }
  };
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_same(const Result& solo, const Result& got, const std::string& what) {
  EXPECT_EQ(got.n_final, 1) << what;
  EXPECT_TRUE(same_floats(solo.embedding, got.embedding)) << what << ": embedding bits differ";
  EXPECT_EQ(solo.prompt_tokens, got.prompt_tokens) << what;
  EXPECT_TRUE(same_floats(solo.prompt_logprobs, got.prompt_logprobs))
      << what << ": prompt logprob bits differ";
  EXPECT_EQ(solo.ranks, got.ranks) << what;
  ASSERT_EQ(solo.prompt_top.size(), got.prompt_top.size()) << what;
  for (size_t i = 0; i < solo.prompt_top.size(); ++i) {
    ASSERT_EQ(solo.prompt_top[i].size(), got.prompt_top[i].size()) << what;
    for (size_t j = 0; j < solo.prompt_top[i].size(); ++j) {
      EXPECT_EQ(solo.prompt_top[i][j].token, got.prompt_top[i][j].token) << what;
      EXPECT_EQ(std::memcmp(&solo.prompt_top[i][j].logprob, &got.prompt_top[i][j].logprob, 4), 0)
          << what;
    }
  }
  EXPECT_EQ(solo.tokens, got.tokens) << what;
  EXPECT_TRUE(same_floats(solo.logprobs, got.logprobs)) << what;
  EXPECT_EQ(solo.digest, got.digest) << what;
  EXPECT_EQ(solo.reason, got.reason) << what;
  EXPECT_FALSE(got.prompt_after_generated) << what;
}

// 65 embedding requests (every pooling, some truncated), 8 generation and 8 scoring requests;
// a third of the prompts share a 19-token prefix so the prefix cache has something to offer.
std::vector<RequestParams> mixed_requests(int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  auto tokens = [&](int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = int32_t(1 + rng() % uint32_t(n_vocab - 1));
    return t;
  };
  const std::vector<int32_t> shared = tokens(19);
  auto prompt = [&](int i) {
    std::vector<int32_t> p = i % 3 == 0 ? shared : std::vector<int32_t>{};
    const std::vector<int32_t> tail = tokens(1 + int(rng() % 37));
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  std::vector<RequestParams> out;
  const Pooling poolings[] = {Pooling::model, Pooling::mean, Pooling::cls, Pooling::last};
  for (int i = 0; i < 65; ++i) {
    RequestParams r;
    r.prompt_tokens = prompt(i);
    r.embedding = poolings[i % 4];
    r.embedding_dims = i % 5 == 0 ? 16 : 0;
    out.push_back(r);
  }
  for (int i = 0; i < 8; ++i) {
    RequestParams r;
    r.prompt_tokens = prompt(i);
    r.max_tokens = 6 + i;
    r.ignore_eos = true;
    r.sampling.logprobs = true;
    if (i % 2) r.sampling.temperature = 0.8f, r.sampling.seed = uint64_t(i);
    out.push_back(r);
  }
  for (int i = 0; i < 8; ++i) {
    RequestParams r;
    r.prompt_tokens = prompt(i);
    r.prompt_logprobs = true;
    r.prompt_top_logprobs = i % 3;
    r.max_tokens = i % 2 ? 0 : 3;
    r.ignore_eos = true;
    r.sampling.logprobs = true;
    out.push_back(r);
  }
  // Interleave the kinds, so each arrives among the others.
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

EngineOptions base_options(const std::string& model) {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 128;
  o.max_queue = 1000;
  return o;
}

std::vector<Result> run_all(const EngineOptions& o, const std::vector<RequestParams>& reqs,
                            tzero::EngineStats* stats = nullptr) {
  Engine e(o);
  std::vector<Result> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) e.submit(reqs[i], collect(out[i]));
  e.run_until_idle();
  if (stats) *stats = e.stats();
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  return out;
}

std::vector<Result> run_solo(const std::string& model, const std::vector<RequestParams>& reqs) {
  EngineOptions o = base_options(model);
  o.prefix_cache = false;
  o.max_seqs = 1;
  Engine e(o);
  std::vector<Result> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    e.submit(reqs[i], collect(out[i]));
    e.run_until_idle();
  }
  return out;
}

class EngineEmbed : public ::testing::TestWithParam<std::pair<const char*, const char*>> {
 protected:
  std::string model() const {
    return tzero::test::generated_model(GetParam().first, GetParam().second);
  }
};

// Proves: every request of a mixed batch of 81 (65 embeddings among them) gets its solo bits
// (embedding, prompt logprobs, ranks, alternatives, generated tokens, digest) under three
// schedules: small budget + chunk 5 + blocks of 4 + a pool small enough to preempt; chunk 1
// (every prompt fed token by token); one big budget on 2 threads.
TEST_P(EngineEmbed, SameBitsAloneOrAmong64Others) {
  const std::string m = model();
  const int n_vocab = Engine(base_options(m)).info().n_vocab;
  const std::vector<RequestParams> reqs = mixed_requests(n_vocab, 7);
  const std::vector<Result> solo = run_solo(m, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].embedding != Pooling::none) {
      const size_t want = reqs[i].embedding_dims ? 16 : 256;
      ASSERT_EQ(solo[i].embedding.size(), want) << i;
      double ss = 0;
      for (float x : solo[i].embedding) ss += double(x) * x;
      EXPECT_NEAR(ss, 1.0, 1e-5) << i;
      EXPECT_TRUE(solo[i].tokens.empty()) << i;
    }
    if (reqs[i].prompt_logprobs) {
      EXPECT_EQ(solo[i].prompt_tokens.size(), reqs[i].prompt_tokens.size() - 1) << i;
    }
  }

  struct Config {
    const char* name;
    int budget, chunk, block, kv_tokens, seqs, threads;
  };
  const Config configs[] = {
      {"budget 24, chunk 5, blocks of 4, 160 KV positions", 24, 5, 4, 160, 8, 1},
      {"chunk 1", 16, 1, 16, 0, 16, 1},
      {"budget 256, 2 threads", 256, 0, 16, 0, 32, 2}};
  for (const Config& c : configs) {
    EngineOptions o = base_options(m);
    o.max_batch_tokens = c.budget;
    o.prefill_chunk = c.chunk;
    o.block_size = c.block;
    o.kv_tokens = c.kv_tokens;
    o.max_seqs = c.seqs;
    o.n_threads = c.threads;
    tzero::EngineStats st;
    const std::vector<Result> got = run_all(o, reqs, &st);
    for (size_t i = 0; i < reqs.size(); ++i)
      expect_same(solo[i], got[i], std::string(c.name) + ", request " + std::to_string(i));
    if (c.kv_tokens > 0) {
      EXPECT_GT(st.preemptions, 0u) << c.name << ": no preemption happened";
    }
    int cached = 0;
    for (const Result& r : got) cached += r.n_cached;
    EXPECT_GT(cached, 0) << c.name << ": the prefix cache was never used";
  }
}

// The final norm of each position as the single-sequence forward pass traces it
// ("result_norm", one position at a time), and the logits row of each position.
struct Reference {
  std::vector<std::vector<float>> normed, logits;  // per position
};

Reference reference(const std::string& path, const std::vector<int32_t>& prompt) {
  auto model = tzero::Model::load(path);
  tzero::ThreadPool pool(1);
  auto fwd = tzero::make_forward(*model, pool, {128, 16, tzero::select_kernels("auto"), false, 0});
  Reference r;
  fwd->set_trace([&](std::string_view name, int, const float* data, size_t n, size_t len, int) {
    if (name == "result_norm" && n == 1) r.normed.emplace_back(data, data + len);
  });
  tzero::KvCache kv(model->hparams(), 128);
  const size_t V = size_t(model->hparams().n_vocab);
  for (size_t p = 0; p < prompt.size(); ++p) {
    r.logits.emplace_back(V);
    fwd->eval(&prompt[p], 1, int(p), kv, r.logits.back().data());
  }
  return r;
}

// pool-v1 written out again, independently of runtime/pooling.
std::vector<float> pool_ref(const Reference& ref, Pooling pooling, int dims) {
  std::vector<float> v;
  if (pooling == Pooling::mean) {
    v = ref.normed[0];
    for (size_t p = 1; p < ref.normed.size(); ++p)
      for (size_t d = 0; d < v.size(); ++d) v[d] += ref.normed[p][d];
    for (float& x : v) x /= float(ref.normed.size());
  } else {
    v = pooling == Pooling::cls ? ref.normed.front() : ref.normed.back();
  }
  if (dims > 0) v.resize(size_t(dims));
  double ss = 0;
  for (float x : v) ss += double(x) * double(x);
  for (float& x : v) x = float(double(x) * (1.0 / std::sqrt(ss)));
  return v;
}

// Proves: an embedding is pool-v1 of the final norm the forward pass computes for each
// position (traced one position at a time, a path that shares nothing with the engine's
// hidden rows but the layers), and a prompt token's logprob, rank and alternatives are
// logprob-v1 of the logits row before it; both with the engine's prompt fed in chunks of 3.
TEST_P(EngineEmbed, EqualsTheForwardPassPooledInPositionOrder) {
  const std::string m = model();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 23; ++i) prompt.push_back(int32_t(1 + (i * 53 + 11) % 500));
  const Reference ref = reference(m, prompt);
  ASSERT_EQ(ref.normed.size(), prompt.size());

  EngineOptions o = base_options(m);
  o.prefill_chunk = 3;
  Engine e(o);
  for (Pooling pl : {Pooling::mean, Pooling::cls, Pooling::last}) {
    for (int dims : {0, 10}) {
      Result r;
      RequestParams q;
      q.prompt_tokens = prompt;
      q.embedding = pl;
      q.embedding_dims = dims;
      e.submit(q, collect(r));
      e.run_until_idle();
      EXPECT_TRUE(same_floats(r.embedding, pool_ref(ref, pl, dims)))
          << tzero::to_string(pl) << " dims " << dims;
    }
  }
  // A 1-token prompt: the three poolings agree.
  std::vector<std::vector<float>> one;
  for (Pooling pl : {Pooling::mean, Pooling::cls, Pooling::last}) {
    Result r;
    RequestParams q;
    q.prompt_tokens = {prompt[0]};
    q.embedding = pl;
    e.submit(q, collect(r));
    e.run_until_idle();
    one.push_back(r.embedding);
  }
  EXPECT_TRUE(same_floats(one[0], one[1]));
  EXPECT_TRUE(same_floats(one[0], one[2]));

  Result s;
  RequestParams q;
  q.prompt_tokens = prompt;
  q.prompt_logprobs = true;
  q.prompt_top_logprobs = 3;
  q.max_tokens = 0;
  e.submit(q, collect(s));
  e.run_until_idle();
  ASSERT_EQ(s.prompt_tokens.size(), prompt.size() - 1);
  EXPECT_EQ(s.reason, "length");
  for (size_t p = 0; p + 1 < prompt.size(); ++p) {
    const float* row = ref.logits[p].data();
    const int V = int(ref.logits[p].size());
    const tzero::Logprobs lp(row, V);
    const int32_t next = prompt[p + 1];
    EXPECT_EQ(s.prompt_tokens[p], next);
    const float want = lp.of(next);
    EXPECT_EQ(std::memcmp(&s.prompt_logprobs[p], &want, 4), 0) << "position " << p;
    int larger = 0;
    for (int i = 0; i < V; ++i) larger += row[i] > row[next];
    EXPECT_EQ(s.ranks[p], larger + 1) << p;
    const auto top = lp.top(3);
    ASSERT_EQ(s.prompt_top[p].size(), 3u);
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(s.prompt_top[p][j].token, top[j].first) << p;
  }
}

// Proves: a prompt token's logprob is the very number generation reports for that token: the
// greedy continuation's logprobs equal the prompt logprobs of prompt + continuation.
TEST_P(EngineEmbed, PromptLogprobsEqualGeneratedLogprobs) {
  const std::string m = model();
  Engine e(base_options(m));
  RequestParams g;
  g.prompt_tokens = {5, 17, 99, 3, 250, 41};
  g.max_tokens = 7;
  g.ignore_eos = true;
  g.sampling.logprobs = true;
  Result gen;
  e.submit(g, collect(gen));
  e.run_until_idle();
  ASSERT_EQ(gen.tokens.size(), 7u);

  RequestParams s;
  s.prompt_tokens = g.prompt_tokens;
  s.prompt_tokens.insert(s.prompt_tokens.end(), gen.tokens.begin(), gen.tokens.end());
  s.prompt_logprobs = true;
  s.max_tokens = 0;
  Result sc;
  e.submit(s, collect(sc));
  e.run_until_idle();
  ASSERT_EQ(sc.prompt_logprobs.size(), s.prompt_tokens.size() - 1);
  const std::vector<float> tail(sc.prompt_logprobs.end() - 7, sc.prompt_logprobs.end());
  EXPECT_TRUE(same_floats(tail, gen.logprobs));
  for (size_t i = sc.ranks.size() - 7; i < sc.ranks.size(); ++i) EXPECT_EQ(sc.ranks[i], 1) << i;
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineEmbed,
                         ::testing::Values(std::make_pair("tiny", "q8_0"),
                                           std::make_pair("tiny-qwen3", "f32"),
                                           std::make_pair("tiny-gemma3", "f16")),
                         [](const auto& p) {
                           std::string n = std::string(p.param.first) + "_" + p.param.second;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Proves: the engine refuses what it cannot do, naming the field.
TEST(EngineEmbedErrors, RefusedRequests) {
  Engine e(base_options(tzero::test::generated_model("tiny", "q8_0")));
  auto refused = [&](const RequestParams& r, const std::string& param) {
    try {
      e.submit(r, nullptr);
      ADD_FAILURE() << "accepted; expected a refusal naming " << param;
    } catch (const tzero::RequestError& err) {
      EXPECT_EQ(err.param, param) << err.what();
    }
  };
  RequestParams r;
  r.prompt_tokens = {1, 2, 3};
  r.embedding = Pooling::mean;
  r.embedding_dims = 257;
  refused(r, "dimensions");
  r.embedding_dims = -1;
  refused(r, "dimensions");
  r.embedding_dims = 0;
  r.prompt_logprobs = true;
  refused(r, "prompt_logprobs");
  r.prompt_tokens.assign(129, 1);
  refused(r, "prompt");
  RequestParams s;
  s.prompt_tokens = {1, 2, 3};
  s.max_tokens = 0;
  refused(s, "max_tokens");  // nothing to do
  s.prompt_logprobs = true;
  s.prompt_top_logprobs = 21;
  refused(s, "prompt_logprobs");
  s.prompt_top_logprobs = 0;
  s.prompt_tokens.assign(128, 1);  // scoring only: the whole context may be prompt
  EXPECT_NO_THROW(e.submit(s, nullptr));
  e.run_until_idle();
  EXPECT_EQ(e.info().pooling, Pooling::mean);
  EXPECT_EQ(e.info().n_embd, 256);
}

}  // namespace
