// Whole-model checks of the CUDA backend in portable mode: the logits digest of every gen-model
// tiny preset in every dtype is the CPU's for --gpu-layers 0, 1 and all; GPU runs repeat, do
// not depend on the prefill chunk or on batch mates, and trace op by op like the CPU.
// Skips without a CUDA device.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"
#include "support/test_support.h"
#include "tzero/engine.h"

using nlohmann::json;

namespace tzero::test {
namespace {

const char* kPresets[] = {"tiny", "tiny-qwen2", "tiny-qwen3"};
const char* kDtypes[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"};

std::string digest(const std::string& model, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"run",   "-m", model, "-n", "24", "-p", "Once upon a time, far",
                                "--json"};
  a.insert(a.end(), extra.begin(), extra.end());
  const CliResult r = run_tzero(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return "failed: " + r.err;
  return json::parse(r.out)["logits_digest"].get<std::string>();
}

TEST(CudaModel, DigestEqualsCpuForGpuLayers0_1_AllEveryPresetAndDtype) {
  TZ_REQUIRE_GPU();
  for (const char* preset : kPresets)
    for (const char* dtype : kDtypes) {
      const std::string m = generated_model(preset, dtype);
      const std::string cpu = digest(m, {"-t", "2"});
      for (const char* n : {"1", "all"})
        EXPECT_EQ(digest(m, {"--gpu-layers", n, "--mode", "portable"}), cpu)
            << preset << " " << dtype << " --gpu-layers " << n;
    }
}

TEST(CudaModel, GpuRunsRepeatAndIgnoreThePrefillChunk) {
  TZ_REQUIRE_GPU();
  const std::string m = generated_model("tiny-qwen2", "q8_0");
  const std::string first = digest(m, {"--gpu-layers", "all", "--mode", "portable"});
  EXPECT_EQ(digest(m, {"--gpu-layers", "all", "--mode", "portable"}), first);
  for (const char* b : {"1", "3", "64"})
    EXPECT_EQ(digest(m, {"--gpu-layers", "all", "--mode", "portable", "-b", b}), first) << b;
}

// Batch invariance on the device: each request's digest and tokens, run among others through
// the batched engine (paged KV on the GPU, f32 and f16 storage), equal its solo CPU run.
TEST(CudaModel, BatchMatesDoNotChangeBitsOnGpu) {
  TZ_REQUIRE_GPU();
  for (const char* kv : {"f32", "f16"}) {
    const std::string m = generated_model("tiny", "q4_k");
    auto run = [&](const std::string& gpu, const std::string& mode, int n_req) {
      tzero::EngineOptions o;
      o.model_path = m;
      o.mode = *tzero::parse_mode(mode);
      o.gpu_layers = gpu;
      o.kv_type = kv;
      o.block_size = 5;
      o.max_seqs = n_req;
      o.max_batch_tokens = 48;
      tzero::Engine e(o);
      std::vector<std::string> digests(static_cast<size_t>(n_req));
      for (int i = 0; i < n_req; ++i) {
        tzero::RequestParams r;
        for (int k = 0; k < 7 + 5 * i; ++k)
          r.prompt_tokens.push_back(int32_t(1 + (k * 37 + i) % 500));
        r.max_tokens = 12;
        r.ignore_eos = true;
        e.submit(r, [&digests, i](const tzero::TokenEvent& ev) {
          if (ev.finished) digests[size_t(i)] = ev.logits_digest;
        });
      }
      e.run_until_idle();
      return digests;
    };
    const std::vector<std::string> cpu = run("0", "deterministic", 4);
    const std::vector<std::string> gpu = run("all", "portable", 4);
    const std::vector<std::string> gpu_part = run("1", "portable", 4);
    EXPECT_EQ(gpu, cpu) << "kv " << kv;
    EXPECT_EQ(gpu_part, cpu) << "kv " << kv;
  }
}

// Traces of a CPU run and a GPU run diff as identical op by op; a perturbed GPU run does not.
TEST(CudaModel, TracesDiffOpByOpAgainstCpu) {
  TZ_REQUIRE_GPU();
  const std::string m = generated_model("tiny-qwen3", "f16");
  const std::string dir = scratch_dir();
  auto traced = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> a = {"run", "-m",        m,        "-n",      "6",
                                  "-p",  "Once upon", "--json", "--trace", dir + "/" + name};
    a.insert(a.end(), extra.begin(), extra.end());
    const CliResult r = run_tzero(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir + "/" + name;
  };
  const std::string cpu = traced("cpu.trace", {});
  const std::string gpu = traced("gpu.trace", {"--gpu-layers", "all", "--mode", "portable"});
  const std::string half = traced("half.trace", {"--gpu-layers", "1", "--mode", "portable"});
  EXPECT_EQ(run_tzero({"diff", cpu, gpu}).exit_code, 0) << run_tzero({"diff", cpu, gpu}).out;
  EXPECT_EQ(run_tzero({"diff", cpu, half}).exit_code, 0);
  const std::string bad = traced(
      "bad.trace", {"--gpu-layers", "all", "--mode", "portable", "--perturb", "1:ffn_norm:2"});
  const CliResult d = run_tzero({"diff", cpu, bad});
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.out.find("ffn_norm"), std::string::npos) << d.out;
}

}  // namespace
}  // namespace tzero::test
