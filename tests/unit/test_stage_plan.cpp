// How a pipeline splits the layers over its ranks (distributed/stage_plan.h), rank 0's check of
// the other ranks' layers, and the ring's message reader refusing a cut message
// (distributed/wire.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "distributed/stage_plan.h"
#include "distributed/wire.h"
#include "kernels/kernel_set.h"
#include "support/test_support.h"

using tzero::dist::plan_stages;
using tzero::dist::StagePlan;

TEST(StagePlan, BytesBalanceTheLargestShareWithTheHeadOnRankZero) {
  // 8 equal layers and a head worth 2 of them: rank 0 takes fewer layers.
  const std::vector<size_t> layers(8, 100);
  const StagePlan p = plan_stages(layers, 200, 2, "bytes");
  EXPECT_EQ(p.first, (std::vector<int>{0, 3, 8}));  // 200 + 300 = 500 against 500
  EXPECT_EQ(p.describe(), "rank 0: layers 0-2, rank 1: layers 3-7");
  // Uneven layers: the largest share is the least one possible (a 400-byte layer alone).
  const StagePlan q = plan_stages({100, 100, 400, 100, 100, 100}, 0, 3, "bytes");
  EXPECT_EQ(q.first, (std::vector<int>{0, 2, 3, 6}));
  // As many ranks as layers: one each.
  EXPECT_EQ(plan_stages({5, 5, 5}, 50, 3, "bytes").first, (std::vector<int>{0, 1, 2, 3}));
}

TEST(StagePlan, LayersAndNamedCuts) {
  const std::vector<size_t> layers(10, 1);
  EXPECT_EQ(plan_stages(layers, 0, 3, "layers").first, (std::vector<int>{0, 4, 7, 10}));
  EXPECT_EQ(plan_stages(layers, 0, 4, "1,2,9").first, (std::vector<int>{0, 1, 2, 9, 10}));
}

TEST(StagePlan, BadSplitsAndTooManyRanksAreRefusedByName) {
  const std::vector<size_t> layers(4, 1);
  auto message = [&](int n, const std::string& split) {
    try {
      plan_stages(layers, 0, n, split);
    } catch (const tzero::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(5, "bytes").find("5 ranks but the model has 4 layers"), std::string::npos);
  EXPECT_NE(message(3, "2,1").find("at least one layer, in order"), std::string::npos);
  EXPECT_NE(message(3, "1,4").find("at least one layer"), std::string::npos);
  EXPECT_NE(message(3, "0,2").find("at least one layer"), std::string::npos);
  EXPECT_NE(message(3, "2").find("names 1 first layers but 3 ranks need 2"), std::string::npos);
  EXPECT_NE(message(2, "half").find("--pipeline-split wants bytes, layers"), std::string::npos);
  EXPECT_NE(message(2, "1,").find("--pipeline-split wants"), std::string::npos);
  EXPECT_NE(message(2, "-1").find("--pipeline-split wants"), std::string::npos);
}

TEST(RingWire, ValuesComeBackInOrderAndACutMessageIsRefused) {
  tzero::dist::WireWriter w;
  w.put(tzero::dist::MsgKind::pass);
  w.put_string("model.gguf");
  w.put_vector(std::vector<int32_t>{3, 1, 4});
  w.put(2.5);
  std::vector<uint8_t> bytes = w.bytes();
  tzero::dist::WireReader r(bytes);
  EXPECT_EQ(r.get<tzero::dist::MsgKind>(), tzero::dist::MsgKind::pass);
  EXPECT_EQ(r.get_string(), "model.gguf");
  EXPECT_EQ(r.get_vector<int32_t>(), (std::vector<int32_t>{3, 1, 4}));
  EXPECT_EQ(r.get<double>(), 2.5);
  EXPECT_THROW(r.get<uint8_t>(), tzero::Error);
  bytes.resize(bytes.size() - 10);  // the vector's last element and the double lost
  tzero::dist::WireReader cut(bytes);
  cut.get<tzero::dist::MsgKind>();
  cut.get_string();
  EXPECT_THROW(cut.get_vector<int32_t>(), tzero::Error);
}

TEST(StagePlan, TensorsBelongToTheLayerTheirNameSays) {
  EXPECT_EQ(tzero::dist::tensor_layer("blk.0.attn_q.weight"), 0);
  EXPECT_EQ(tzero::dist::tensor_layer("blk.61.ffn_down_exps.weight"), 61);
  EXPECT_EQ(tzero::dist::tensor_layer("token_embd.weight"), -1);
  EXPECT_EQ(tzero::dist::tensor_layer("output.weight"), -1);
  EXPECT_EQ(tzero::dist::tensor_layer("blk.x.attn_q.weight"), -1);
  EXPECT_EQ(tzero::dist::tensor_layer("blk.7"), -1);
}

// Proves: rank 0's check of the other ranks' layers, made in the same read as the model file's
// hash, gives each rank's layers_xxh128 and leaves the file's hash what a plain load computes
// (the fingerprint); once the file's hash is made, it reads the layers again, to the same
// hashes. Rank 0's part is loaded as under mpirun (its layers copied and laid out for the
// kernels), the other ranks holding one layer each.
TEST(StagePlan, RankLayerHashesComeWithTheFileHashInOneRead) {
  const std::string path = tzero::test::generated_model("tiny", "q4_k");
  const std::unique_ptr<tzero::Model> whole = tzero::Model::load(path);
  const int n_layer = whole->hparams().n_layer;
  ASSERT_GE(n_layer, 2);
  StagePlan plan;
  plan.first = {0, 1};
  for (int l = 2; l <= n_layer; ++l) plan.first.push_back(l);
  const tzero::KernelSet kernels = tzero::select_kernels("auto");
  tzero::dist::StagePart part = tzero::dist::load_stage(
      std::make_unique<tzero::GgufFile>(path, tzero::MappedFile::Load::Map), plan, 0, &kernels);
  const tzero::GgufFile plain(path);
  const std::vector<std::string> got = tzero::dist::ranks_layers_xxh128(*part.model, plan);
  ASSERT_EQ(int(got.size()), plan.n_ranks());
  EXPECT_FALSE(part.model->hash_file(nullptr)) << "the file's hash was not made in that read";
  for (int r = 1; r < plan.n_ranks(); ++r)
    EXPECT_EQ(got[size_t(r)], tzero::dist::layers_xxh128(plain, plan.begin(r), plan.end(r))) << r;
  EXPECT_NE(got[1], tzero::dist::layers_xxh128(plain, 0, 1));
  EXPECT_EQ(part.model->file_xxh128(), whole->file_xxh128());
  EXPECT_EQ(tzero::dist::ranks_layers_xxh128(*part.model, plan), got);  // (a second read)
}

// The experts' split (expert parallelism): contiguous ranges over ranks 1..N-1, rank 0 none.
TEST(StagePlan, ExpertsSplitOverRanksOneToNMinusOne) {
  StagePlan plan;
  plan.first = {0, 1, 2, 3};
  EXPECT_EQ(plan.experts(1), (std::pair<int, int>{0, 0})) << "without expert parallelism";
  plan.n_expert = 16;
  EXPECT_EQ(plan.experts(0), (std::pair<int, int>{0, 0}));
  EXPECT_EQ(plan.experts(1), (std::pair<int, int>{0, 8}));
  EXPECT_EQ(plan.experts(2), (std::pair<int, int>{8, 16}));
  EXPECT_EQ(plan.expert_owner(7), 1);
  EXPECT_EQ(plan.expert_owner(8), 2);
  EXPECT_EQ(plan.describe(),
            "rank 0: layer 0, rank 1: layer 1, rank 2: layer 2; experts 0-7 on rank 1, experts "
            "8-15 on rank 2");
  plan.first = {0, 1, 2, 3, 4};
  EXPECT_EQ(plan.experts(1), (std::pair<int, int>{0, 5}));
  EXPECT_EQ(plan.experts(3), (std::pair<int, int>{10, 16}));
  EXPECT_TRUE(tzero::dist::is_expert_tensor("blk.3.ffn_down_exps.weight"));
  EXPECT_TRUE(tzero::dist::is_expert_tensor("blk.0.ffn_gate_exps.bias"));
  EXPECT_FALSE(tzero::dist::is_expert_tensor("blk.0.ffn_down_shexp.weight"));
  EXPECT_FALSE(tzero::dist::is_expert_tensor("blk.0.ffn_gate_inp.weight"));
}

// Proves: with expert parallelism each rank's hash covers its layers without the routed
// experts, plus its experts' slabs of every layer, and rank 0 makes them in its one read of the
// file; a rank holding other experts has another hash.
TEST(StagePlan, ExpertRanksHashTheirSlabsOfEveryLayer) {
  const std::string path = tzero::test::generated_model("tiny-qwen3moe", "q8_0");
  StagePlan plan;
  plan.first = {0, 1, 2};
  plan.n_expert = 16;
  const tzero::KernelSet kernels = tzero::select_kernels("auto");
  tzero::dist::StagePart part = tzero::dist::load_stage(
      std::make_unique<tzero::GgufFile>(path, tzero::MappedFile::Load::Map), plan, 0, &kernels);
  const tzero::GgufFile plain(path);
  const std::vector<std::string> got = tzero::dist::ranks_layers_xxh128(*part.model, plan);
  EXPECT_FALSE(part.model->hash_file(nullptr)) << "the file's hash was not made in that read";
  EXPECT_EQ(got[1], tzero::dist::rank_xxh128(plain, plan, 1));
  EXPECT_NE(got[1], tzero::dist::layers_xxh128(plain, 1, 2)) << "the whole layer's experts";
  StagePlan other = plan;
  other.first = {0, 1, 2, 2};  // (rank 1 of 3: experts 0-7 only)
  EXPECT_NE(tzero::dist::rank_xxh128(plain, other, 1), got[1]);
  // The routed experts stay mapped on rank 0: only its layer's other tensors were copied.
  const tzero::GgufFile& f0 = part.model->gguf();
  const tzero::GgufTensorInfo* exps = f0.find_tensor("blk.0.ffn_up_exps.weight");
  ASSERT_NE(exps, nullptr);
  EXPECT_GE(exps->data, f0.file_data());
  EXPECT_LT(exps->data, f0.file_data() + f0.file_size());
  // Rank 1 of 3 (experts 0-7) copies its experts' slabs of every layer (layer 0 is rank 0's)
  // and hashes the copies: the hash rank 0 expects, made from the bytes it computes with.
  // (Not laid out for the kernels, to compare the bytes.)
  tzero::dist::StagePart one = tzero::dist::load_stage(
      std::make_unique<tzero::GgufFile>(path, tzero::MappedFile::Load::Map), other, 1, nullptr);
  EXPECT_EQ(one.weights_xxh128, tzero::dist::rank_xxh128(plain, other, 1));
  const tzero::GgufFile& f1 = one.model->gguf();
  const tzero::GgufTensorInfo* t = f1.find_tensor("blk.0.ffn_up_exps.weight");
  const tzero::GgufTensorInfo* p = plain.find_tensor("blk.0.ffn_up_exps.weight");
  ASSERT_TRUE(t && p);
  EXPECT_TRUE(t->data < f1.file_data() || t->data >= f1.file_data() + f1.file_size());
  EXPECT_EQ(f1.owned_part(*t), (std::pair<size_t, size_t>{0, t->n_bytes / 2}));
  EXPECT_EQ(std::memcmp(t->data, p->data, t->n_bytes / 2), 0) << "experts 0-7 copied";
}

// Proves: a rank's experts' slabs are laid out for its kernels like a whole model's (only those
// rows: the rest of the tensor is never touched), and the file's hash still reads the rest from
// the file and the slabs as the file has them.
TEST(StagePlan, ARanksExpertSlabsAreLaidOutForItsKernelsAndHashAsTheFile) {
  const std::string path = tzero::test::generated_model("tiny-qwen3moe", "q4_k");
  const tzero::KernelSet kernels = tzero::select_kernels("auto");
  const std::unique_ptr<tzero::Model> whole =
      tzero::Model::load(path, tzero::MappedFile::Load::Read, &kernels);
  if (whole->repacked_tensors(tzero::WeightLayout::Rows16) == 0)
    GTEST_SKIP() << "this CPU's kernels (" << kernels.name << ") lay no Q4_K matrix out anew";
  StagePlan plan;
  plan.first = {0, 1, 2, 2};  // (rank 1 of 3: experts 0-7)
  plan.n_expert = 16;
  tzero::dist::StagePart one = tzero::dist::load_stage(
      std::make_unique<tzero::GgufFile>(path, tzero::MappedFile::Load::Map), plan, 1, &kernels);
  const tzero::Model& m = *one.model;
  EXPECT_EQ(m.layers()[0].up_exps.first.layout, tzero::WeightLayout::Rows16) << "layer 0's experts";
  EXPECT_EQ(m.layers()[1].up_exps.first.layout, tzero::WeightLayout::Rows16);
  EXPECT_EQ(m.file_xxh128(), whole->file_xxh128());
}
