// The forward pass over more than one backend, without a GPU: a second CPU backend that hides
// its host memory (every buffer crossing goes through upload/download, as with a device) runs
// the last N layers. For every N the logits and the trace are the CPU-only run's bits, and a
// perturbation made on that "device" is the one made on the host. This checks the split of
// model/forward.cpp (which layers where, the residual crossing, the head, tracing of a
// backend without host memory) that the CUDA backend relies on.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "backend/backends.h"
#include "backend/cpu/cpu_backend.h"
#include "base/hash.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "model/weights.h"
#include "support/test_support.h"

namespace tzero {
namespace {

// A CPU backend seen as a device: no host view of its buffers.
class OpaqueCpu final : public BackendOps {
 public:
  explicit OpaqueCpu(std::unique_ptr<CpuBackend> inner) : c_(std::move(inner)) {}
  std::string describe() const override { return "opaque " + c_->describe(); }
  void begin(const ForwardBatch& b, KvStore& kv) override { c_->begin(b, kv); }
  void upload(Act d, const float* h, size_t rows) override { c_->upload(d, h, rows); }
  void download(Act s, size_t rows, float* h) override { c_->download(s, rows, h); }
  void embed(const Matrix& t, Act o) override { c_->embed(t, o); }
  void rmsnorm(Act x, const float* w, float eps, Act o, size_t rows) override {
    c_->rmsnorm(x, w, eps, o, rows);
  }
  void rmsnorm_heads(Act x, const float* w, float eps, size_t hd, size_t rows) override {
    c_->rmsnorm_heads(x, w, eps, hd, rows);
  }
  void matmul(const Matrix& w, Act x, Act y, size_t rows) override { c_->matmul(w, x, y, rows); }
  void add_bias(Act y, const float* b, size_t rows) override { c_->add_bias(y, b, rows); }
  void rope(Act x, int nh, int hd, RopeLayout l, RopeFreqs f) override {
    c_->rope(x, nh, hd, l, f);
  }
  void kv_write(int layer, Act k, Act v) override { c_->kv_write(layer, k, v); }
  void attention(int layer, Act q, Act o, const AttentionSpec& s) override {
    c_->attention(layer, q, o, s);
  }
  void add(Act x, Act y, size_t rows) override { c_->add(x, y, rows); }
  void scale(Act x, float s, size_t rows) override { c_->scale(x, s, rows); }
  void softcap(Act x, float cap, size_t rows) override { c_->softcap(x, cap, rows); }
  void glu(Activation a, Act g, Act u, Act o, size_t rows) override { c_->glu(a, g, u, o, rows); }
  void moe_route(Act l, const MoeSpec& s, Act p, Act i, Act w, size_t rows) override {
    c_->moe_route(l, s, p, i, w, rows);
  }
  void matmul_experts(const ExpertMatrix& w, Act x, bool per_slot, Act i, Act y,
                      size_t rows) override {
    c_->matmul_experts(w, x, per_slot, i, y, rows);
  }
  void copy_cols(Act s, size_t ss, size_t so, Act d, size_t ds, size_t dof, size_t w, size_t g,
                 size_t rows) override {
    c_->copy_cols(s, ss, so, d, ds, dof, w, g, rows);
  }
  void add_expert_bias(Act y, const float* b, Act i, size_t rows) override {
    c_->add_expert_bias(y, b, i, rows);
  }
  void moe_combine(Act y, Act w, Act o, size_t rows) override { c_->moe_combine(y, w, o, rows); }
  void scale_by_sigmoid(Act x, Act g, size_t rows) override { c_->scale_by_sigmoid(x, g, rows); }
  void mul_sigmoid(Act x, Act g, size_t rows) override { c_->mul_sigmoid(x, g, rows); }
  void short_conv(int layer, Act x, const float* w, int K, Act o, const float* b) override {
    c_->short_conv(layer, x, w, K, o, b);
  }
  void ssm_scan(int layer, Act xbc, Act dt, const float* dtb, const float* A, const float* D, Act y,
                const SsmSpec& sp) override {
    c_->ssm_scan(layer, xbc, dt, dtb, A, D, y, sp);
  }
  void rmsnorm_groups(Act x, const float* w, float eps, size_t g, size_t rows) override {
    c_->rmsnorm_groups(x, w, eps, g, rows);
  }
  void relu_sqr(Act x, size_t rows) override { c_->relu_sqr(x, rows); }
  void l2norm_heads(Act x, size_t width, size_t hd, float eps, size_t rows) override {
    c_->l2norm_heads(x, width, hd, eps, rows);
  }
  void delta_gates(Act a, Act b, const float* dt, const float* A, size_t rows) override {
    c_->delta_gates(a, b, dt, A, rows);
  }
  void delta_net(int layer, Act qkv, Act g, Act beta, Act o, const DeltaNetSpec& sp) override {
    c_->delta_net(layer, qkv, g, beta, o, sp);
  }
  void gather_logits_rows(Act x, Act o) override { c_->gather_logits_rows(x, o); }

 private:
  std::unique_ptr<CpuBackend> c_;
};

constexpr int kCtx = 64, kBatch = 16;

std::unique_ptr<Forward> split_forward(const Model& m, ThreadPool& pool, int device_layers) {
  if (device_layers == 0) return make_forward(m, pool, {kCtx, kBatch, scalar_kernels(), false, 0});
  auto arch = make_architecture(m);
  auto host = std::make_unique<CpuBackend>(m.hparams(), arch->layout(), pool, scalar_kernels(),
                                           false, kCtx, m.rope_factors(kCtx));
  // The "device" uses the SIMD kernels when there are any: same bits either way.
  auto dev = std::make_unique<OpaqueCpu>(
      std::make_unique<CpuBackend>(m.hparams(), arch->layout(), pool, select_kernels("auto"), false,
                                   kCtx, m.rope_factors(kCtx)));
  return std::make_unique<Forward>(m, std::move(arch), kCtx, kBatch, std::move(host),
                                   std::move(dev), device_layers);
}

struct RunResult {
  std::string logits;  // every row's digest, in order
  std::string trace;   // (name, layer, pos, digest) of every traced tensor
};

// Prefill of 11 tokens in chunks of 5 and 6, then 3 decode steps, traced.
RunResult run(Forward& f, const Model& m, const std::string& perturb_op = "") {
  RunResult r;
  f.set_trace(
      [&](std::string_view name, int layer, const float* data, size_t n, size_t len, int pos) {
        r.trace += std::string(name) + "/" + std::to_string(layer) + "@" + std::to_string(pos) +
                   "=" + xxh128_hex(data, n * len * 4) + "\n";
      });
  if (!perturb_op.empty()) f.set_perturbation(1, perturb_op, 7);
  KvCache kv(m.hparams(), kCtx);
  std::vector<float> logits(size_t(m.hparams().n_vocab));
  std::vector<int32_t> toks;
  for (int i = 0; i < 14; ++i) toks.push_back(int32_t((i * 37 + 5) % m.hparams().n_vocab));
  f.eval(toks.data(), 5, 0, kv, nullptr);
  f.eval(toks.data() + 5, 6, 5, kv, logits.data());
  r.logits += xxh128_hex(logits.data(), logits.size() * 4);
  for (int p = 11; p < 14; ++p) {
    f.eval(&toks[size_t(p)], 1, p, kv, logits.data());
    r.logits += xxh128_hex(logits.data(), logits.size() * 4);
  }
  return r;
}

class ForwardBackends : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardBackends, EverySplitGivesTheHostBits) {
  const auto model = Model::load(test::generated_model(GetParam(), "q8_0"));
  ThreadPool pool(2);
  auto ref_fwd = split_forward(*model, pool, 0);
  const RunResult ref = run(*ref_fwd, *model);
  ASSERT_FALSE(ref.trace.empty());
  for (int n = 1; n <= model->hparams().n_layer; ++n) {
    SCOPED_TRACE("device layers " + std::to_string(n));
    auto f = split_forward(*model, pool, n);
    ASSERT_NE(f->device(), nullptr);
    const RunResult got = run(*f, *model);
    EXPECT_EQ(got.logits, ref.logits);
    EXPECT_EQ(got.trace, ref.trace);
  }
}

TEST_P(ForwardBackends, PerturbationOnTheDeviceIsTheHostsPerturbation) {
  // f32 weights: a one-ulp change of an activation survives (q8_0 would quantize it away).
  const auto model = Model::load(test::generated_model(GetParam(), "f32"));
  ThreadPool pool(2);
  auto clean = split_forward(*model, pool, 0);
  auto host = split_forward(*model, pool, 0);
  auto dev = split_forward(*model, pool, model->hparams().n_layer);
  const RunResult c = run(*clean, *model);
  const RunResult h = run(*host, *model, "attn_norm");
  const RunResult d = run(*dev, *model, "attn_norm");
  // The flipped bit shows in attn_norm and what is computed from it (Qcur, ...), whether or not
  // it reaches the logits; on the "device" it must be uploaded back to do the same.
  EXPECT_NE(h.trace, c.trace) << "the perturbation changed nothing";
  EXPECT_EQ(d.logits, h.logits);
  EXPECT_EQ(d.trace, h.trace);
}

INSTANTIATE_TEST_SUITE_P(Presets, ForwardBackends,
                         ::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma2",
                                           "tiny-gemma3", "tiny-phi3", "tiny-gpt-oss",
                                           "tiny-glm4moe", "tiny-deepseek2", "tiny-qwen3next",
                                           "tiny-qwen35", "tiny-nemotron-h"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace tzero
