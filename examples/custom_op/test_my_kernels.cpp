// The example's kernels get the verdicts they were written to get, and the engine runs a model
// with the canonical custom kernel to the same logits as its own kernels.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/weights.h"
#include "my_kernels.h"
#include "runtime/generate.h"
#include "tokenizer/vocab.h"
#include "tzero/check_op.h"
#include "tzero/ops.h"

namespace {
struct Registered {
  Registered() { example::register_my_kernels(); }
} registered;
}  // namespace

TEST(CustomOpExample, VerdictsAreTheExpectedOnes) {
  EXPECT_EQ(tzero::check_op("matmul.f32", "canonical_x4").verdict,
            tzero::OpVerdict::IdenticalToReference);
  const auto seq = tzero::check_op("matmul.f32", "sequential");
  EXPECT_EQ(seq.verdict, tzero::OpVerdict::StableButDifferent);
  EXPECT_GT(seq.max_ulp_vs_reference, 0u);
  const auto bad = tzero::check_op("matmul.f32", "batch_dependent");
  EXPECT_EQ(bad.verdict, tzero::OpVerdict::Unstable);
  EXPECT_NE(bad.detail.find("alone vs in a batch"), std::string::npos) << bad.detail;
}

TEST(CustomOpExample, EngineUsesTheRegisteredKernel) {
  const char* model_path = std::getenv("TZ_EXAMPLE_MODEL");
  if (!model_path) GTEST_SKIP() << "TZ_EXAMPLE_MODEL not set";
  auto model = tzero::Model::load(model_path);
  const tzero::Vocab vocab = tzero::Vocab::from_gguf(model->gguf());
  tzero::GenerateOptions opt;
  opt.prompt = "the dog";
  opt.n_predict = 6;
  const auto builtin = tzero::generate(*model, vocab, opt);
  opt.compute.op_overrides = {"matmul.f32=canonical_x4"};
  EXPECT_EQ(tzero::generate(*model, vocab, opt).logits_digest, builtin.logits_digest);
  opt.compute.op_overrides = {"matmul.f32=sequential"};
  EXPECT_NE(tzero::generate(*model, vocab, opt).logits_digest, builtin.logits_digest);
  opt.compute.op_overrides = {"matmul.f32=nonexistent"};
  EXPECT_THROW(tzero::generate(*model, vocab, opt), tzero::Error);
}
