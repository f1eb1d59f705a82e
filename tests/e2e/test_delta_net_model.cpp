// The Gated DeltaNet hybrids (qwen3next, qwen35, qwen35moe) through the forward pass: a prompt's
// logits are the same bits however it is chunked (one pass, chunks, one token at a time), with
// any thread count and kernel set; a recurrent state refuses to rewind; the engine and the
// server say how much state a sequence holds and how many snapshots the prefix cache keeps;
// `tzero bench` and `tzero info` run.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backend/backends.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/weights.h"
#include "support/serve_process.h"
#include "support/test_support.h"
#include "tzero/engine.h"

namespace tzero {
namespace {

constexpr int kTokens = 23;

// The hash of the logits at every position of a fixed prompt, fed `chunk` tokens per pass.
std::string logits_by_chunk(const Model& m, int chunk, int threads, const KernelSet& ks) {
  ThreadPool pool(threads);
  auto fwd = make_forward(m, pool, {64, chunk, ks, false, 0});
  KvCache kv(m.hparams(), 64);
  std::vector<int32_t> toks;
  for (int i = 0; i < kTokens; ++i) toks.push_back(int32_t((i * 53 + 11) % m.hparams().n_vocab));
  std::vector<float> logits(size_t(m.hparams().n_vocab));
  std::string h;
  for (int p = 0; p < kTokens; p += chunk) {
    const int n = std::min(chunk, kTokens - p);
    fwd->eval(&toks[size_t(p)], n, p, kv, logits.data());
    h += xxh128_hex(logits.data(), logits.size() * 4) + "@" + std::to_string(p + n) + " ";
  }
  return h;
}

class DeltaNetModel : public ::testing::TestWithParam<const char*> {};

// The hash of the logits after positions that every chunking ends a pass on (1-token chunks
// give all of them; the others give theirs): compare at the common ends, all chunkings.
TEST_P(DeltaNetModel, AnyChunkingThreadsAndKernelsGiveTheSameBits) {
  const auto m = Model::load(test::generated_model(GetParam(), "q8_0"));
  const std::string one = logits_by_chunk(*m, 1, 1, scalar_kernels());
  for (int chunk : {23, 7, 3, 2}) {
    const std::string got = logits_by_chunk(*m, chunk, 2, scalar_kernels());
    // Every "hash@end" of the chunked run is in the token-by-token run.
    size_t at = 0;
    while (at < got.size()) {
      const size_t sp = got.find(' ', at);
      const std::string item = got.substr(at, sp - at);
      EXPECT_NE(one.find(item), std::string::npos) << "chunk " << chunk << ": " << item;
      at = sp + 1;
    }
  }
  for (const KernelSet* ks : available_kernels()) {
    SCOPED_TRACE(ks->name);
    EXPECT_EQ(logits_by_chunk(*m, 5, 2, *ks), logits_by_chunk(*m, 5, 1, scalar_kernels()));
  }
}

TEST_P(DeltaNetModel, TheStateRefusesToRewind) {
  const auto m = Model::load(test::generated_model(GetParam(), "q8_0"));
  ThreadPool pool(1);
  auto fwd = make_forward(*m, pool, {64, 8, scalar_kernels(), false, 0});
  KvCache kv(m->hparams(), 64);
  const std::vector<int32_t> toks = {5, 9, 17, 33, 65, 129};
  std::vector<float> logits(size_t(m->hparams().n_vocab));
  fwd->eval(toks.data(), 6, 0, kv, logits.data());
  try {
    fwd->eval(toks.data(), 2, 3, kv, logits.data());
    ADD_FAILURE() << "a rewind of the recurrent state was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot continue at position 3"), std::string::npos)
        << e.what();
  }
  // From position 0 the state starts again: the same logits as the first time.
  std::vector<float> again(logits.size());
  fwd->eval(toks.data(), 6, 0, kv, again.data());
  EXPECT_EQ(xxh128_hex(again.data(), again.size() * 4),
            xxh128_hex(logits.data(), logits.size() * 4));
}

INSTANTIATE_TEST_SUITE_P(Presets, DeltaNetModel,
                         ::testing::Values("tiny-qwen3next", "tiny-qwen3next-ssm-in", "tiny-qwen35",
                                           "tiny-qwen35moe", "tiny-nemotron-h"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(DeltaNetEngine, PrefixCacheSnapshotsAndTheStateAreReported) {
  EngineOptions o;
  o.model_path = test::generated_model("tiny-qwen3next", "q8_0");
  o.n_ctx = 128;
  o.max_seqs = 3;
  Engine e(o);
  EXPECT_TRUE(e.info().prefix_cache);
  EXPECT_EQ(e.info().state_snapshots, 6);  // twice max_seqs (far below 512 MiB)
  EXPECT_NE(e.info().prefix_cache_note.find("6 snapshots"), std::string::npos);
  // 3 linear-attention layers, each (K - 1) x C convolution inputs and Hv x D x D state:
  // C = 2 x 2 x 32 + 4 x 32 = 256, so 3 x (3 x 256 + 4 x 32 x 32) floats.
  EXPECT_EQ(e.info().state_bytes_per_seq, size_t(3 * (3 * 256 + 4 * 32 * 32) * 4));
  EXPECT_EQ(e.stats().state_bytes, e.info().state_bytes_per_seq * 9);
  o.prefix_cache = false;
  Engine off(o);
  EXPECT_FALSE(off.info().prefix_cache);
  EXPECT_EQ(off.info().state_snapshots, 0);
}

TEST(DeltaNetCli, BenchAndInfoRun) {
  const std::string model = test::generated_model("tiny-qwen35", "q8_0");
  const test::CliResult b =
      test::run_tzero({"bench", "-m", model, "-p", "16", "-n", "4", "-d", "8", "-r", "2"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  const test::CliResult i = test::run_tzero({"info", "-m", model});
  EXPECT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("2 of 4 layers attend"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("2 linear-attention layers"), std::string::npos) << i.out;
}

// The server says at startup how much state a sequence holds and how the prefix cache keeps
// it, and /metrics says it too; a completion runs, and a second one with the same prompt
// restores a snapshot.
TEST(DeltaNetServe, StartupAndMetricsSayTheStateAndTheCache) {
  test::ServeProcess srv(
      {"-m", test::generated_model("tiny-qwen35moe", "q8_0"), "-c", "256", "--parallel", "4"});
  ASSERT_TRUE(srv.ok()) << srv.stderr_text();
  const std::string err = srv.stderr_text();
  EXPECT_NE(err.find("recurrent state"), std::string::npos) << err;
  EXPECT_NE(err.find("prefix cache on, with 8 snapshots"), std::string::npos) << err;
  auto c = srv.client();
  const std::string prompt =
      "Once upon a time there was a little girl named Lily who loved to play outside in the "
      "park with her friends every day";
  std::string first;
  for (int i = 0; i < 2; ++i) {
    int status = 0;
    const auto j =
        test::post_json(*c, "/v1/completions",
                        {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}}, &status);
    ASSERT_EQ(status, 200) << j.dump();
    const std::string digest = j["choices"][0]["tzero"]["logits_digest"];
    if (i == 0) first = digest;
    EXPECT_EQ(digest, first) << "the restored state gives other bits";
  }
  // The engine publishes its counters at the end of the step that answered: poll briefly.
  std::string body;
  for (int tries = 0; tries < 50; ++tries) {
    const auto m = c->Get("/metrics");
    ASSERT_TRUE(m);
    body = m->body;
    if (body.find("tzero_engine_cached_tokens_total 0") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(body.find("tzero_prefix_cache_enabled 1"), std::string::npos);
  EXPECT_NE(body.find("tzero_recurrent_state_bytes "), std::string::npos);
  EXPECT_EQ(body.find("tzero_recurrent_state_snapshots 0"), std::string::npos) << body;
  EXPECT_EQ(body.find("tzero_engine_cached_tokens_total 0"), std::string::npos) << body;
}

}  // namespace
}  // namespace tzero
