// The mixture-of-experts kernels (kernels/moe.h, kernels/matmul_experts.h): routing and the
// combine in the moe-v1 order, re-implemented here from the header's comments and compared as
// bits; the grouped expert products of every kernel variant, thread count and batch equal to the
// scalar reference one slot at a time (memcmp); fast mode's arrival-order combine.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "kernels/dot.h"
#include "kernels/kernel_set.h"
#include "kernels/math.h"
#include "kernels/matmul_experts.h"
#include "kernels/moe.h"
#include "kernels/quant.h"
#include "support/test_support.h"

namespace tzero {
namespace {

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

struct Route {
  std::vector<float> probs, weights;
  std::vector<int32_t> ids;
};
Route route(const std::vector<float>& logits, size_t k, bool norm) {
  Route r;
  r.probs.resize(logits.size());
  r.ids.resize(k);
  r.weights.resize(k);
  moe_route_ref(logits.data(), logits.size(), k, norm, r.probs.data(), r.ids.data(),
                r.weights.data());
  return r;
}

TEST(MoeRoute, TiesGoToTheLowerExpertId) {
  // Experts 5, 2 and 7 tie for the largest logit, 1 and 6 for the next.
  std::vector<float> l = {0.1f, 0.5f, 2.0f, -1.0f, 0.0f, 2.0f, 0.5f, 2.0f};
  const Route r = route(l, 5, true);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 5, 7, 1, 6}));
  // Equal logits give equal probs and equal weights.
  EXPECT_EQ(std::bit_cast<uint32_t>(r.weights[0]), std::bit_cast<uint32_t>(r.weights[2]));
  // All equal: the first k ids, in order.
  EXPECT_EQ(route(std::vector<float>(16, 0.25f), 4, false).ids, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(MoeRoute, SoftmaxTopKAndWeightsInTheDocumentedOrder) {
  SplitMix64 rng(3);
  for (size_t E : {4, 8, 60, 128}) {
    for (size_t k : {1, 2, 4, 8}) {
      if (k > E) continue;
      std::vector<float> l(E);
      for (auto& x : l) x = 4.0f * (2.0f * rng.uniform() - 1.0f);
      for (bool norm : {false, true}) {
        const Route r = route(l, k, norm);
        // probs: e_i / z with e_i = exp_ref(l_i - max) and z = sum_f32_ref(e).
        float m = l[0];
        for (float x : l) m = std::max(m, x);
        std::vector<float> e(E), p(E);
        for (size_t i = 0; i < E; ++i) e[i] = exp_ref(l[i] - m);
        const float z = sum_f32_ref(e.data(), E);
        for (size_t i = 0; i < E; ++i) p[i] = e[i] / z;
        ASSERT_TRUE(same_bits(p.data(), r.probs.data(), E));
        // ids: distinct, by descending prob then ascending id, and no unchosen expert beats one.
        std::set<int32_t> chosen(r.ids.begin(), r.ids.end());
        ASSERT_EQ(chosen.size(), k);
        for (size_t j = 1; j < k; ++j) {
          const float a = p[size_t(r.ids[j - 1])], b = p[size_t(r.ids[j])];
          EXPECT_TRUE(a > b || (a == b && r.ids[j - 1] < r.ids[j]));
        }
        for (size_t i = 0; i < E; ++i) {
          if (!chosen.count(int32_t(i))) {
            EXPECT_LE(p[i], p[size_t(r.ids[k - 1])]);
          }
        }
        // weights: probs of the chosen, over their rank-order sum when renormalised.
        float s = p[size_t(r.ids[0])];
        for (size_t j = 1; j < k; ++j) s += p[size_t(r.ids[j])];
        for (size_t j = 0; j < k; ++j) {
          const float want = norm ? p[size_t(r.ids[j])] / s : p[size_t(r.ids[j])];
          EXPECT_EQ(std::bit_cast<uint32_t>(want), std::bit_cast<uint32_t>(r.weights[j]));
        }
      }
    }
  }
}

// SoftmaxWeight gating (gpt-oss): the k largest logits (ties to the lower id), then a softmax
// over those k in rank order; probs are the logits unchanged. Re-implemented from moe.h.
TEST(MoeRoute, SoftmaxWeightChoosesByLogitsThenNormalisesOverTheChosen) {
  std::vector<float> l = {0.1f, 0.5f, 2.0f, -1.0f, 0.0f, 2.0f, 0.5f, 2.0f};
  std::vector<float> probs(l.size()), w(5);
  std::vector<int32_t> ids(5);
  moe_route_softmax_weight_ref(l.data(), l.size(), 5, probs.data(), ids.data(), w.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 5, 7, 1, 6}));
  EXPECT_TRUE(same_bits(probs.data(), l.data(), l.size()));
  SplitMix64 rng(13);
  for (size_t E : {4, 32, 128}) {
    for (size_t k : {1, 2, 4}) {
      std::vector<float> x(E);
      for (auto& v : x) v = 6.0f * (2.0f * rng.uniform() - 1.0f);
      std::vector<float> p(E), got(k);
      std::vector<int32_t> id(k);
      moe_route_softmax_weight_ref(x.data(), E, k, p.data(), id.data(), got.data());
      for (size_t j = 1; j < k; ++j) EXPECT_GT(x[size_t(id[j - 1])], x[size_t(id[j])]);
      std::vector<float> e(k);
      for (size_t j = 0; j < k; ++j) e[j] = exp_ref(x[size_t(id[j])] - x[size_t(id[0])]);
      const float z = sum_f32_ref(e.data(), k);
      for (size_t j = 0; j < k; ++j)
        EXPECT_EQ(std::bit_cast<uint32_t>(e[j] / z), std::bit_cast<uint32_t>(got[j]));
      // The softmax over k differs from the softmax over every expert (the gating matters).
      if (k < E) {
        const Route r = route(x, k, false);
        EXPECT_EQ(r.ids, id);
        EXPECT_FALSE(same_bits(r.weights.data(), got.data(), k));
      }
    }
  }
}

// Grouped routing (glm4moe, deepseek2), re-implemented from moe.h's SIGMOID comment: sigmoid
// (or softmax) scores, the bias for the choice only, groups scored by their two best, the
// chosen groups' experts only, weights the unbiased scores renormalised then scaled; both top-k
// levels break ties to the lower id.
TEST(MoeRoute, GroupedSigmoidChoosesWithinTheBestGroupsAndWeighsUnbiased) {
  SplitMix64 rng(17);
  for (bool softmax : {false, true})
    for (size_t G : {1, 4, 8}) {
      const size_t E = 32, P = E / G, k = 4, used = G > 1 ? G / 2 : 1;
      std::vector<float> l(E), b(E);
      for (auto& x : l) x = 3.0f * (2.0f * rng.uniform() - 1.0f);
      for (auto& x : b) x = 0.2f * (2.0f * rng.uniform() - 1.0f);
      std::vector<float> probs(E), w(k), sel(E);
      std::vector<int32_t> ids(k);
      moe_route_sigmoid_ref(l.data(), b.data(), E, k, G, used, true, 2.5f, probs.data(), ids.data(),
                            w.data(), sel.data(), softmax);
      // The scores.
      std::vector<float> p(E);
      if (softmax) {
        const Route r = route(l, 1, false);
        p = r.probs;
      } else {
        for (size_t i = 0; i < E; ++i) p[i] = sigmoid_ref(l[i]);
      }
      ASSERT_TRUE(same_bits(p.data(), probs.data(), E));
      // The groups that stay.
      std::vector<float> s(E);
      for (size_t i = 0; i < E; ++i) s[i] = p[i] + b[i];
      std::vector<bool> stays(G, true);
      if (G > 1) {
        std::vector<std::pair<float, size_t>> score;
        for (size_t g = 0; g < G; ++g) {
          std::vector<float> v(s.begin() + long(g * P), s.begin() + long((g + 1) * P));
          std::sort(v.begin(), v.end(), std::greater<float>());
          score.push_back({v[0] + v[1], g});
        }
        std::stable_sort(score.begin(), score.end(),
                         [](const auto& a, const auto& c) { return a.first > c.first; });
        stays.assign(G, false);
        for (size_t j = 0; j < used; ++j) stays[score[j].second] = true;
      }
      // Every chosen expert is in a staying group, and no staying expert beats the last chosen.
      std::set<int32_t> chosen(ids.begin(), ids.end());
      ASSERT_EQ(chosen.size(), k);
      for (int32_t id : ids) EXPECT_TRUE(stays[size_t(id) / P]) << "expert " << id;
      for (size_t i = 0; i < E; ++i) {
        if (stays[i / P] && !chosen.count(int32_t(i))) {
          EXPECT_LE(s[i], s[size_t(ids[k - 1])]);
        }
      }
      // Weights: unbiased scores, renormalised (rank order, clamped), then scaled.
      float sum = p[size_t(ids[0])];
      for (size_t j = 1; j < k; ++j) sum += p[size_t(ids[j])];
      sum = std::max(sum, 6.103515625e-5f);
      for (size_t j = 0; j < k; ++j)
        EXPECT_EQ(std::bit_cast<uint32_t>((p[size_t(ids[j])] / sum) * 2.5f),
                  std::bit_cast<uint32_t>(w[j]));
    }
  // Ties: equal selection scores go to the lower id; equal group scores to the lower group.
  std::vector<float> l(8, 0.0f), probs(8), w(2), sel(8);
  std::vector<int32_t> ids(2);
  moe_route_sigmoid_ref(l.data(), nullptr, 8, 2, 4, 2, false, 1.0f, probs.data(), ids.data(),
                        w.data(), sel.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1}));
}

TEST(MoeCombine, RankOrderLeftToRightAndTheOrderMatters) {
  SplitMix64 rng(5);
  const size_t k = 8, n = 1000;
  std::vector<float> y(k * n), w(k), out(n);
  for (auto& x : y) x = 2.0f * rng.uniform() - 1.0f;
  for (auto& x : w) x = rng.uniform();
  moe_combine_ref(y.data(), w.data(), k, n, out.data());
  std::vector<float> want(n), reversed(n);
  for (size_t i = 0; i < n; ++i) {
    float a = w[0] * y[i];
    for (size_t j = 1; j < k; ++j) {
      const float p = w[j] * y[j * n + i];
      a = a + p;
    }
    want[i] = a;
    float b = w[k - 1] * y[(k - 1) * n + i];
    for (size_t j = k - 1; j-- > 0;) {
      const float p = w[j] * y[j * n + i];
      b = b + p;
    }
    reversed[i] = b;
  }
  EXPECT_TRUE(same_bits(want.data(), out.data(), n));
  // Another order (ascending expert id would be one) gives other bits on some element: a
  // change of order is a change of moe-v1.
  EXPECT_FALSE(same_bits(reversed.data(), out.data(), n));
}

TEST(MoeCombine, ArrivalOrderIsTheReferenceOnOneThreadAndAFloatSumOnMany) {
  SplitMix64 rng(9);
  const size_t n_tok = 3, k = 8, n = 512;
  std::vector<float> y(n_tok * k * n), w(n_tok * k), ref(n_tok * n), got(n_tok * n);
  for (auto& x : y) x = 2.0f * rng.uniform() - 1.0f;
  for (auto& x : w) x = rng.uniform();
  for (size_t t = 0; t < n_tok; ++t) moe_combine_ref(&y[t * k * n], &w[t * k], k, n, &ref[t * n]);
  ThreadPool one(1);
  moe_combine_arrival(one, y.data(), w.data(), n_tok, k, n, got.data());
  EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size()));
  ThreadPool four(4);
  moe_combine_arrival(four, y.data(), w.data(), n_tok, k, n, got.data());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(ref[i], got[i], 1e-5f);
}

TEST(MoeMath, SigmoidIsOneOverOnePlusExpRef) {
  for (float x : {-100.0f, -3.5f, -0.0f, 0.0f, 0.25f, 7.0f, 90.0f}) {
    const float want = 1.0f / (1.0f + exp_ref(-x));
    EXPECT_EQ(std::bit_cast<uint32_t>(want), std::bit_cast<uint32_t>(sigmoid_ref(x))) << x;
  }
}

// n_expert experts of (N, K) random weights of `type`.
ExpertMatrix random_experts(TensorType type, size_t n_expert, size_t N, size_t K, uint32_t seed,
                            std::vector<uint8_t>& bytes) {
  const size_t rb = row_bytes(type, K);
  bytes.assign(n_expert * N * rb, 0);
  const std::vector<float> wf = test::random_floats(n_expert * N * K, seed);
  for (size_t r = 0; r < n_expert * N; ++r) quantize_row(type, &wf[r * K], &bytes[r * rb], K);
  return ExpertMatrix{Matrix{type, bytes.data(), int64_t(N), int64_t(K), rb}, int64_t(n_expert)};
}

std::vector<const KernelSet*> every_set() {
  std::vector<const KernelSet*> v = available_kernels();
  try {
    v.push_back(&select_kernels("amx-emu"));
  } catch (const Error&) {
  }
  return v;
}

// Random routes: k distinct experts per token, some shared between tokens, some never chosen.
std::vector<int32_t> random_ids(size_t n_tok, size_t k, size_t n_expert, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int32_t> ids;
  for (size_t t = 0; t < n_tok; ++t) {
    std::vector<int32_t> row;
    while (row.size() < k) {
      const auto e = int32_t(rng.next() % (n_expert - 1));  // the last expert is never chosen
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    ids.insert(ids.end(), row.begin(), row.end());
  }
  return ids;
}

TEST(MoeMatmul, GroupedProductsEqualTheScalarReferenceSlotBySlot) {
  const TensorType types[] = {
      TensorType::F32,    TensorType::F16,   TensorType::BF16, TensorType::Q8_0,
      TensorType::Q4_0,   TensorType::Q4_1,  TensorType::Q5_0, TensorType::Q5_1,
      TensorType::IQ4_NL, TensorType::MXFP4, TensorType::Q4_K, TensorType::Q5_K,
      TensorType::Q6_K,   TensorType::Q2_K,  TensorType::Q3_K, TensorType::IQ4_XS};
  uint32_t seed = 1;
  ThreadPool p1(1), p2(2), p3(3);
  for (TensorType type : types) {
    const size_t K = 256, N = 40, E = 9, k = 3;
    std::vector<uint8_t> bytes;
    const ExpertMatrix w = random_experts(type, E, N, K, seed++, bytes);
    for (size_t n_tok : {1, 2, 7, 20}) {
      for (bool per_slot : {false, true}) {
        const size_t n_x = per_slot ? n_tok * k : n_tok;
        const std::vector<float> x = test::random_floats(n_x * K, seed++);
        const std::vector<int32_t> ids = random_ids(n_tok, k, E, seed++);
        std::vector<float> ref(n_tok * k * N), got(ref.size());
        matmul_experts_ref(w, x.data(), per_slot, ids.data(), n_tok, k, ref.data());
        for (const KernelSet* ks : every_set())
          for (ThreadPool* pool : {&p1, &p2, &p3}) {
            ExpertScratch scratch;
            std::fill(got.begin(), got.end(), -7.0f);
            matmul_experts(*pool, *ks, w, x.data(), per_slot, ids.data(), n_tok, k, got.data(),
                           scratch);
            EXPECT_TRUE(same_bits(ref.data(), got.data(), ref.size()))
                << traits(type).name << " " << ks->name << " threads " << pool->size() << " tokens "
                << n_tok << (per_slot ? " per slot" : "");
          }
      }
    }
  }
}

// Expert parallelism's two halves (docs/DISTRIBUTED.md): the slots whose experts live on other
// ranks are left out here (a negative id: their rows untouched), and the other rank computes
// them one slot per row (k = 1, each slot's input row copied). Both give the slots' bits of
// the whole call.
TEST(MoeMatmul, SlotsLeftOutAndSlotsComputedOneARowGiveTheWholeCallsBits) {
  const size_t K = 256, N = 48, E = 8, k = 3, n_tok = 20;
  std::vector<uint8_t> bytes;
  ThreadPool pool(2);
  for (TensorType type : {TensorType::F32, TensorType::Q8_0, TensorType::Q4_K, TensorType::MXFP4})
    for (const bool per_slot : {false, true}) {  // (gate and up: a token's row; down: a slot's)
      const ExpertMatrix w = random_experts(type, E, N, K, 21, bytes);
      const std::vector<float> x = test::random_floats((per_slot ? n_tok * k : n_tok) * K, 22);
      const std::vector<int32_t> ids = random_ids(n_tok, k, E, 23);
      for (const KernelSet* ks : every_set()) {
        ExpertScratch scratch;
        std::vector<float> whole(n_tok * k * N);
        matmul_experts(pool, *ks, w, x.data(), per_slot, ids.data(), n_tok, k, whole.data(),
                       scratch);
        // Here: experts 0-3; elsewhere: 4-7, their slots one per row.
        std::vector<int32_t> here = ids, there;
        std::vector<float> rows;
        std::vector<size_t> slots;
        for (size_t s = 0; s < here.size(); ++s)
          if (here[s] >= 4) {
            const size_t row = per_slot ? s : s / k;
            there.push_back(here[s]);
            slots.push_back(s);
            rows.insert(rows.end(), x.begin() + std::ptrdiff_t(row * K),
                        x.begin() + std::ptrdiff_t((row + 1) * K));
            here[s] = -1;
          }
        ASSERT_FALSE(slots.empty());
        std::vector<float> got(whole.size(), -7.0f), far(slots.size() * N);
        matmul_experts(pool, *ks, w, x.data(), per_slot, here.data(), n_tok, k, got.data(),
                       scratch);
        matmul_experts(pool, *ks, w, rows.data(), false, there.data(), slots.size(), 1, far.data(),
                       scratch);
        for (size_t i = 0; i < slots.size(); ++i) {
          for (size_t c = 0; c < N; ++c)
            ASSERT_EQ(got[slots[i] * N + c], -7.0f) << "a slot left out was written";
          std::memcpy(&got[slots[i] * N], &far[i * N], N * sizeof(float));
        }
        EXPECT_TRUE(same_bits(whole.data(), got.data(), whole.size()))
            << traits(type).name << " " << ks->name << (per_slot ? " per slot" : "");
        std::vector<float> ref(whole.size(), -7.0f);  // the scalar reference leaves them out too
        matmul_experts_ref(w, x.data(), per_slot, here.data(), n_tok, k, ref.data());
        EXPECT_EQ(ref[slots[0] * N], -7.0f);
        std::vector<int32_t> none(ids.size(), -1);  // all left out: nothing written
        std::vector<float> untouched(whole.size(), -7.0f);
        matmul_experts(pool, *ks, w, x.data(), per_slot, none.data(), n_tok, k, untouched.data(),
                       scratch);
        EXPECT_EQ(untouched, std::vector<float>(whole.size(), -7.0f));
      }
    }
}

// A token's expert outputs do not depend on its batch mates: alone, or among tokens that chose
// the same experts (a bigger group, AMX-sized at 16+), the bits are the same.
TEST(MoeMatmul, ATokensRowsDoNotDependOnItsBatchMates) {
  const size_t K = 512, N = 64, E = 4, k = 2, n_tok = 24;
  std::vector<uint8_t> bytes;
  ThreadPool pool(2);
  for (TensorType type : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K, TensorType::F16}) {
    const ExpertMatrix w = random_experts(type, E, N, K, 11, bytes);
    const std::vector<float> x = test::random_floats(n_tok * K, 12);
    const std::vector<int32_t> ids = random_ids(n_tok, k, E, 13);
    for (const KernelSet* ks : every_set()) {
      ExpertScratch scratch;
      std::vector<float> batch(n_tok * k * N), solo(k * N);
      matmul_experts(pool, *ks, w, x.data(), false, ids.data(), n_tok, k, batch.data(), scratch);
      for (size_t t = 0; t < n_tok; ++t) {
        matmul_experts(pool, *ks, w, &x[t * K], false, &ids[t * k], 1, k, solo.data(), scratch);
        EXPECT_TRUE(same_bits(solo.data(), &batch[t * k * N], k * N))
            << traits(type).name << " " << ks->name << " token " << t;
      }
    }
  }
}

}  // namespace
}  // namespace tzero
