// The device options through the real binary, in any build: without CUDA (the default build)
// asking for a GPU is an input error that says "not built with CUDA"; with CUDA but no device it
// names the missing device; bad --gpu-layers / --mode pairs are input errors everywhere.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "support/test_support.h"

using nlohmann::json;
using tzero::test::CliResult;
using tzero::test::run_tzero;

namespace {

bool gpu_usable() {
  return tzero::cuda_device_info().usable;
}

TEST(CudaCli, AskingForAGpuWithoutOneIsAnInputError) {
  if (gpu_usable()) GTEST_SKIP() << "a CUDA device is present: the no-GPU error path is not taken";
  const std::string m = tzero::test::generated_model("tiny", "q8_0");
  const std::string want = tzero::cuda_built() ? "no CUDA device" : "not built with CUDA";
  for (const char* n : {"1", "all"}) {
    const CliResult r =
        run_tzero({"run", "-m", m, "-n", "4", "--gpu-layers", n, "--mode", "portable"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  }
  const CliResult b = run_tzero({"bench", "-m", m, "-p", "4", "-n", "4", "-r", "1", "--gpu-layers",
                                 "all", "--mode", "portable"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find(want), std::string::npos) << b.err;
  const CliResult bw = run_tzero({"device", "--bandwidth", "--mib", "1"});
  EXPECT_EQ(bw.exit_code, 2);
  EXPECT_NE(bw.err.find(want), std::string::npos) << bw.err;
}

TEST(CudaCli, DeviceAndFingerprintReportTheBuild) {
  const CliResult d = run_tzero({"device", "--json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const json j = json::parse(d.out);
  EXPECT_EQ(j["cuda_built"].get<bool>(), tzero::cuda_built());
  if (!tzero::cuda_built()) {
    EXPECT_EQ(j["device"], "none (not built with CUDA)");
  }
  const CliResult t = run_tzero({"device"});
  EXPECT_NE(t.out.find(tzero::cuda_built() ? "cuda: built" : "cuda: not built"), std::string::npos);

  const std::string m = tzero::test::generated_model("tiny", "q8_0");
  const CliResult f = run_tzero({"fingerprint", "-m", m, "--json"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(json::parse(f.out)["manifest"]["device"]["cuda_built"].get<bool>(),
            tzero::cuda_built());
}

TEST(CudaCli, BadGpuLayersAndModePairsAreInputErrors) {
  const std::string m = tzero::test::generated_model("tiny", "q8_0");  // 2 layers
  auto err = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"run", "-m", m, "-n", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    const CliResult r = run_tzero(a);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    return r.err;
  };
  EXPECT_NE(err({"--gpu-layers", "-3", "--mode", "portable"}).find("--gpu-layers wants"),
            std::string::npos);
  EXPECT_NE(err({"--gpu-layers", "x"}).find("--gpu-layers wants"), std::string::npos);
  EXPECT_NE(err({"--mode", "portable"}).find("needs --gpu-layers"), std::string::npos);
  const std::string e = err({"--gpu-layers", "1", "--mode", "fast"});
  EXPECT_NE(e.find(tzero::cuda_built() ? "needs --mode portable" : "not built with CUDA"),
            std::string::npos)
      << e;
}

// --gpu-layers 0 is the CPU: the same digest as without the option.
TEST(CudaCli, ZeroGpuLayersIsTheCpu) {
  const std::string m = tzero::test::generated_model("tiny", "q8_0");
  const CliResult a = run_tzero({"run", "-m", m, "-n", "6", "--json"});
  const CliResult b = run_tzero({"run", "-m", m, "-n", "6", "--json", "--gpu-layers", "0"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(json::parse(a.out)["logits_digest"], json::parse(b.out)["logits_digest"]);
}

}  // namespace
