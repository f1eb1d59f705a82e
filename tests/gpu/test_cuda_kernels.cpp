// Every CUDA kernel against the CPU scalar reference, bit for bit, on random inputs of many
// shapes (docs/CUDA.md). Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "gpu/gpu_test_util.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"
#include "support/test_support.h"

namespace tzero::test {
namespace {

std::vector<size_t> cols_for(TensorType t) {
  if (t == TensorType::Q4_K || t == TensorType::Q6_K) return {256, 512, 768, 2048, 2304};
  if (t == TensorType::Q8_0 || t == TensorType::Q4_0) return {32, 64, 96, 256, 288, 1024};
  return {1, 15, 16, 17, 64, 100, 256, 1000};
}

// Weight rows of type t quantized from random floats (every 5th row scaled up, row 3 zero).
std::vector<uint8_t> make_weights(TensorType t, size_t rows, size_t cols, uint32_t seed,
                                  size_t* rb_out) {
  const size_t rb = row_bytes(t, cols);
  *rb_out = rb;
  std::vector<uint8_t> w(rows * rb);
  for (size_t r = 0; r < rows; ++r) {
    std::vector<float> v = random_floats(cols, seed + uint32_t(r), r % 5 == 0 ? 30.0f : 0.5f);
    if (r == 3)
      for (float& f : v) f = 0.0f;
    quantize_row(t, v.data(), &w[r * rb], cols);
  }
  return w;
}

TEST(CudaKernels, GemmEqualsScalarBitsEveryTypeAndShape) {
  TZ_REQUIRE_GPU();
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                              TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                              TensorType::Q6_K};
  ThreadPool one(1);
  uint32_t seed = 1;
  for (TensorType t : types)
    for (size_t cols : cols_for(t))
      for (size_t rows : {size_t(1), size_t(5), size_t(17), size_t(64)})
        for (size_t n_tok : {size_t(1), size_t(2), size_t(5), size_t(9)}) {
          const std::string what = std::string(traits(t).name) + " cols " + std::to_string(cols) +
                                   " rows " + std::to_string(rows) + " tokens " +
                                   std::to_string(n_tok);
          size_t rb;
          const std::vector<uint8_t> w = make_weights(t, rows, cols, seed++, &rb);
          std::vector<float> x = random_floats(n_tok * cols, seed++, 2.0f);
          if (n_tok > 1)
            for (size_t i = 0; i < cols; ++i) x[cols + i] = 0.0f;  // an all-zero token row
          Matrix m{t, w.data(), int64_t(rows), int64_t(cols), rb};
          MatmulScratch scratch;
          std::vector<float> y_cpu(n_tok * rows);
          matmul(one, scalar_kernels(), m, x.data(), n_tok, y_cpu.data(), scratch);

          Dev<uint8_t> dw(w);
          Dev<float> dx(x), dy(n_tok * rows);
          const void* xk = dx.get();
          Dev<uint8_t> dq(n_tok * (cols / 32 + 1) * sizeof(ActQ8K));
          if (t == TensorType::Q8_0 || t == TensorType::Q4_0) {
            cuda::quantize_act_q8(dx.get(), dq.get(), n_tok, cols);
            xk = dq.get();
            std::vector<uint8_t> q = dq.host();
            ASSERT_EQ(
                std::memcmp(q.data(), scratch.act_q8.data(), scratch.act_q8.size() * sizeof(ActQ8)),
                0)
                << "ActQ8 " << what;
          } else if (t == TensorType::Q4_K || t == TensorType::Q6_K) {
            cuda::quantize_act_q8k(dx.get(), dq.get(), n_tok, cols);
            xk = dq.get();
            std::vector<uint8_t> q = dq.host();
            ASSERT_EQ(std::memcmp(q.data(), scratch.act_q8k.data(),
                                  scratch.act_q8k.size() * sizeof(ActQ8K)),
                      0)
                << "ActQ8K " << what;
          }
          cuda::gemm(t, dw.get(), rb, xk, cols, rows, n_tok, dy.get(), rows);
          expect_same_bits(y_cpu, dy.host(), what);
          if (HasFailure()) return;
        }
}

TEST(CudaKernels, RmsNormEqualsScalarBits) {
  TZ_REQUIRE_GPU();
  for (size_t n : {1, 15, 16, 64, 100, 256, 896, 4096})
    for (float eps : {1e-5f, 1e-6f}) {
      const size_t rows = 7;
      std::vector<float> x = random_floats(rows * n, uint32_t(n), 3.0f);
      const std::vector<float> w = random_floats(n, uint32_t(n) + 1, 1.0f);
      for (size_t i = 0; i < n; ++i) x[2 * n + i] = 0.0f;  // ss = 0
      std::vector<float> cpu(rows * n);
      for (size_t r = 0; r < rows; ++r) rmsnorm_ref(&x[r * n], w.data(), eps, n, &cpu[r * n]);
      Dev<float> dx(x), dw(w), dout(rows * n);
      cuda::rmsnorm(dx.get(), dw.get(), eps, n, rows, dout.get());
      expect_same_bits(cpu, dout.host(), "rmsnorm n " + std::to_string(n));
      cuda::rmsnorm(dx.get(), dw.get(), eps, n, rows, dx.get());  // in place
      expect_same_bits(cpu, dx.host(), "rmsnorm in place n " + std::to_string(n));
    }
}

TEST(CudaKernels, RopeEqualsScalarBitsBothLayouts) {
  TZ_REQUIRE_GPU();
  struct Case {
    int head_dim, n_rot, n_heads;
    double base;
  };
  for (const Case c : {Case{64, 64, 4, 10000.0}, Case{128, 128, 2, 1e6}, Case{64, 32, 3, 1e4}})
    for (bool neox : {false, true}) {
      const int n_pos = 300;
      const RopeTable table(c.n_rot, n_pos, 10000.0);
      const size_t n_tok = 6, stride = size_t(c.n_heads * c.head_dim);
      std::vector<float> x = random_floats(n_tok * stride, 7, 2.0f), cpu = x;
      const std::vector<int32_t> pos = {0, 1, 2, 17, 255, 299};
      for (size_t t = 0; t < n_tok; ++t)
        for (int h = 0; h < c.n_heads; ++h)
          rope_ref(&cpu[t * stride + size_t(h) * c.head_dim], pos[t], table, neox);
      std::vector<float> tab(table.cos_sin(0), table.cos_sin(0) + size_t(n_pos) * c.n_rot);
      Dev<float> dx(x), dt(tab);
      Dev<int32_t> dp(pos);
      cuda::rope(dx.get(), dp.get(), n_tok, c.n_heads, c.head_dim, stride, dt.get(), c.n_rot, neox);
      expect_same_bits(cpu, dx.host(), "rope hd " + std::to_string(c.head_dim));
    }
}

TEST(CudaKernels, SwigluAndExpEqualScalarBits) {
  TZ_REQUIRE_GPU();
  std::vector<float> g = random_floats(5000, 3, 8.0f), u = random_floats(5000, 4, 1.0f);
  const float special[] = {0.0f,   -0.0f,   88.8f,    -88.8f,    87.3f, -87.4f,
                           100.0f, -100.0f, 1e-30f,   -1e-30f,   0.5f,  -0.5f,
                           20.0f,  -20.0f,  INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < std::size(special); ++i) g[i] = special[i], u[i] = 1.0f;
  for (size_t i = 0; i < 2000; ++i) g[100 + i] = -100.0f + 0.1f * float(i);  // a sweep of exp
  std::vector<float> cpu(g.size());
  swiglu_ref(g.data(), u.data(), g.size(), cpu.data());
  Dev<float> dg(g), du(u), dout(g.size());
  cuda::swiglu(dg.get(), du.get(), g.size(), dout.get());
  expect_same_bits(cpu, dout.host(), "swiglu");
}

TEST(CudaKernels, EmbeddingEqualsDequantizeRowBits) {
  TZ_REQUIRE_GPU();
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                              TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_K,
                              TensorType::Q6_K};
  for (TensorType t : types) {
    const size_t cols = 512, rows = 40;
    size_t rb;
    const std::vector<uint8_t> w = make_weights(t, rows, cols, 11, &rb);
    const std::vector<int32_t> tok = {0, 39, 3, 5, 5, 21};
    std::vector<float> cpu(tok.size() * cols);
    for (size_t i = 0; i < tok.size(); ++i)
      dequantize_row(t, &w[size_t(tok[i]) * rb], &cpu[i * cols], cols);
    Dev<uint8_t> dw(w);
    Dev<int32_t> dt(tok);
    Dev<float> dout(cpu.size());
    cuda::embed(t, dw.get(), rb, cols, dt.get(), tok.size(), dout.get());
    expect_same_bits(cpu, dout.host(), std::string("embed ") + traits(t).name);
  }
}

// Attention over a paged store written by cuda::kv_write, against attention_head_ref over the
// same rows (F16: the rows the CPU store would hold, float_to_fp16 then widened).
TEST(CudaKernels, AttentionEqualsScalarBitsPagedF32AndF16) {
  TZ_REQUIRE_GPU();
  for (bool f16 : {false, true})
    for (int bs : {1, 3, 16})
      for (int hd : {64, 128}) {
        const int n_head = 4, n_head_kv = 2, n_layer = 2, layer = 1;
        const size_t kv_dim = size_t(n_head_kv * hd), q_dim = size_t(n_head * hd);
        // Two sequences of 37 and 20 positions, blocks interleaved in the store.
        const int len[2] = {37, 20};
        std::vector<std::vector<int32_t>> table(2);
        int next = 0;
        for (int p = 0; p < 37; p += bs) {
          table[0].push_back(next++);
          if (p < 20) table[1].push_back(next++);
        }
        const int n_blocks = next;
        cuda::KvGeom g{
            cuda::dev_alloc(size_t(n_blocks) * 2 * n_layer * bs * kv_dim * (f16 ? 2 : 4)), f16,
            n_layer, bs, kv_dim};
        std::vector<float> kr[2], vr[2];  // host rows as the CPU store would widen them
        for (int s = 0; s < 2; ++s) {
          const size_t n = size_t(len[s]);
          kr[s] = random_floats(n * kv_dim, uint32_t(10 + s), 1.0f);
          vr[s] = random_floats(n * kv_dim, uint32_t(20 + s), 1.0f);
          std::vector<int32_t> blk(n), slot(n);
          for (size_t p = 0; p < n; ++p) blk[p] = table[s][p / bs], slot[p] = int32_t(p % bs);
          Dev<float> dk(kr[s]), dv(vr[s]);
          Dev<int32_t> db(blk), dsl(slot);
          cuda::kv_write(g, layer, dk.get(), dv.get(), db.get(), dsl.get(), n);
          cuda::sync();
          if (f16)
            for (size_t i = 0; i < n * kv_dim; ++i) {
              kr[s][i] = fp16_to_float(float_to_fp16(kr[s][i]));
              vr[s][i] = fp16_to_float(float_to_fp16(vr[s][i]));
            }
        }
        // Tokens: seq 0 at positions 0, 5, 36; seq 1 at 19, 0.
        const std::vector<int32_t> pos = {0, 5, 36, 19, 0}, seq = {0, 0, 0, 1, 1};
        const size_t n_tok = pos.size();
        const std::vector<float> q = random_floats(n_tok * q_dim, 99, 1.0f);
        const float scale = 1.0f / std::sqrt(float(hd));
        std::vector<float> cpu(n_tok * q_dim), scratch(64);
        for (size_t t = 0; t < n_tok; ++t)
          for (int h = 0; h < n_head; ++h) {
            const int s = seq[t], kvh = h / (n_head / n_head_kv);
            const float* kb = kr[s].data() + size_t(kvh) * hd;
            const float* vb = vr[s].data() + size_t(kvh) * hd;
            const KvRows k = single_block(&kb, kv_dim), v = single_block(&vb, kv_dim);
            attention_head_ref(&q[t * q_dim + size_t(h) * hd], k, v, size_t(pos[t]) + 1, size_t(hd),
                               scale, scratch.data(), &cpu[t * q_dim + size_t(h) * hd]);
          }
        std::vector<int32_t> flat = table[0], off = {0, int32_t(table[0].size())};
        flat.insert(flat.end(), table[1].begin(), table[1].end());
        Dev<float> dq(q), dout(n_tok * q_dim), dscr(n_tok * n_head * 64);
        Dev<int32_t> dp(pos), ds(seq), dtab(flat), doff(off);
        cuda::attention(g, layer, dq.get(), dp.get(), ds.get(), dtab.get(), doff.get(), n_tok,
                        n_head, n_head_kv, hd, scale, dscr.get(), 64, dout.get());
        expect_same_bits(cpu, dout.host(),
                         std::string(f16 ? "f16" : "f32") + " attention bs " + std::to_string(bs) +
                             " hd " + std::to_string(hd));
        cuda::dev_free(g.d_store);
      }
}

TEST(CudaKernels, AddBiasGatherAreExact) {
  TZ_REQUIRE_GPU();
  const size_t n_tok = 5, len = 300;
  std::vector<float> y = random_floats(n_tok * len, 1, 1.0f), b = random_floats(len, 2, 1.0f);
  std::vector<float> z = random_floats(n_tok * len, 3, 1.0f);
  std::vector<float> cpu = y;
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t i = 0; i < len; ++i) cpu[t * len + i] += b[i];
  for (size_t i = 0; i < cpu.size(); ++i) cpu[i] += z[i];
  Dev<float> dy(y), db(b), dz(z), dg(2 * len);
  cuda::add_bias(dy.get(), db.get(), n_tok, len);
  cuda::add(dy.get(), dz.get(), n_tok * len);
  expect_same_bits(cpu, dy.host(), "add_bias + add");
  Dev<int32_t> rows(std::vector<int32_t>{4, 1});
  cuda::gather_rows(dy.get(), rows.get(), 2, len, dg.get());
  std::vector<float> want(cpu.begin() + 4 * len, cpu.begin() + 5 * len);
  want.insert(want.end(), cpu.begin() + len, cpu.begin() + 2 * len);
  expect_same_bits(want, dg.host(), "gather_rows");
}

}  // namespace
}  // namespace tzero::test
