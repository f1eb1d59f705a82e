// Pipeline stages (Forward::eval_stage; docs/DISTRIBUTED.md, the first piece of issue #36): a
// model's layers split into contiguous ranges, each range with its own Forward and its own KV
// cache (as each rank of a pipeline will hold only its layers' keys and values), the residual
// stream handed from one to the next as float32. Over every cut of the layers, the logits of a
// prompt (every row) and of the decode steps after it are eval's, bit for bit (memcmp), on
// dense, MoE, sliding-window, MLA, gpt-oss and recurrent (Gated DeltaNet, Mamba-2) models.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/kv_cache.h"
#include "runtime/session.h"
#include "support/test_support.h"

namespace {

using Partition = std::vector<int>;  // layer boundaries: 0 < b1 < ... < n_layer

std::vector<Partition> partitions(int n_layer) {
  std::vector<Partition> out;
  for (int cut = 1; cut < n_layer; ++cut) out.push_back({cut, n_layer});  // two stages
  Partition each;                                                         // one stage per layer
  for (int l = 1; l <= n_layer; ++l) each.push_back(l);
  if (n_layer > 2) out.push_back(each);
  return out;
}

void check_model(const std::string& preset, const std::string& dtype) {
  SCOPED_TRACE(preset + " " + dtype);
  tzero::ComputeOptions co;
  co.n_threads = 2;
  co.n_ctx = 64;
  const auto session = tzero::Session::open(tzero::test::generated_model(preset, dtype), co);
  const tzero::HParams& hp = session->hparams();
  const size_t V = size_t(hp.n_vocab), E = size_t(hp.n_embd);
  for (const Partition& parts : partitions(hp.n_layer)) {
    std::string what = "stages ending at";
    for (int b : parts) what += " " + std::to_string(b);
    SCOPED_TRACE(what);
    auto whole = session->make_forward();
    tzero::KvCache whole_kv(hp, session->n_ctx());
    std::vector<std::unique_ptr<tzero::Forward>> stages;
    std::vector<std::unique_ptr<tzero::KvCache>> kvs;  // each stage's own cache
    for (size_t s = 0; s < parts.size(); ++s) {
      stages.push_back(session->make_forward());
      kvs.push_back(std::make_unique<tzero::KvCache>(hp, session->n_ctx()));
    }
    std::vector<int32_t> tokens = {1, 17, 300, 42, 7, 7, 99};  // the prompt, then greedy steps
    int pos = 0;
    for (int step = 0; step < 11; ++step) {
      const int n = step == 0 ? int(tokens.size()) : 1;
      const int32_t* fed = &tokens[tokens.size() - size_t(n)];
      const bool rows = step == 0;  // the prompt's every row, then one row a step
      std::vector<float> want(size_t(n) * V), got(size_t(n) * V), residual(size_t(n) * E);
      if (rows)
        whole->eval_rows(fed, n, pos, whole_kv, want.data());
      else
        whole->eval(fed, n, pos, whole_kv, want.data());
      int begin = 0;
      for (size_t s = 0; s < parts.size(); ++s) {
        stages[s]->eval_stage(fed, n, pos, *kvs[s], begin, parts[s], residual.data(), got.data(),
                              rows);
        begin = parts[s];
      }
      const size_t n_rows = rows ? size_t(n) : 1;
      ASSERT_EQ(std::memcmp(want.data(), got.data(), n_rows * V * sizeof(float)), 0)
          << "step " << step;
      pos += n;
      size_t best = 0;  // greedy, from the last row
      const float* last = &want[(n_rows - 1) * V];
      for (size_t v = 1; v < V; ++v)
        if (last[v] > last[best]) best = v;
      tokens.push_back(int32_t(best));
    }
  }
}

}  // namespace

TEST(PipelineStages, EveryCutOfTheLayersGivesTheWholePassBits) {
  check_model("tiny", "q8_0");
  check_model("tiny-qwen3moe", "q4_k");
  check_model("tiny-gemma3", "q8_0");
  check_model("tiny-deepseek2", "q8_0");
  check_model("tiny-gpt-oss", "mxfp4");
  check_model("tiny-qwen35", "f16");
  check_model("tiny-nemotron-h", "q8_0");
}
