// tzero::check_op (include/tzero/check_op.h): a registered kernel against the scalar reference
// and against itself.
#include "tzero/check_op.h"

#include <cstring>
#include <random>
#include <stdexcept>

#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "ops/registry.h"
#include "trace/diff.h"

namespace tzero {

const char* verdict_name(OpVerdict v) {
  switch (v) {
    case OpVerdict::IdenticalToReference:
      return "identical to the reference";
    case OpVerdict::StableButDifferent:
      return "bit-stable but different from the reference";
    default:
      return "UNSTABLE";
  }
}

namespace {

using tzero::TensorType;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Compares two outputs; on the first difference writes "row r, token t" into where.
bool same(const float* a, const float* b, size_t n_rows, size_t n_tok, std::string* where) {
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t r = 0; r < n_rows; ++r)
      if (std::memcmp(&a[t * n_rows + r], &b[t * n_rows + r], 4) != 0) {
        *where = "row " + std::to_string(r) + ", token " + std::to_string(t);
        return false;
      }
  return true;
}

struct Checker {
  OpCheckReport rep;
  bool unstable(const std::string& what) {
    if (rep.verdict != OpVerdict::Unstable) {
      rep.verdict = OpVerdict::Unstable;
      rep.detail = what;
    }
    return false;
  }
  void compare_reference(const float* ref, const float* got, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t u = tzero::ulp_distance(ref[i], got[i]);
      if (u > rep.max_ulp_vs_reference) rep.max_ulp_vs_reference = u;
      if (u != 0 && rep.verdict == OpVerdict::IdenticalToReference)
        rep.verdict = OpVerdict::StableButDifferent;
    }
  }
};

void check_gemm(Checker& c, TensorType type, GemmKernel fn) {
  const size_t bs = tzero::traits(type).block_size;
  std::vector<size_t> cols = bs == 1    ? std::vector<size_t>{1, 7, 16, 33, 100, 256, 1000}
                             : bs == 32 ? std::vector<size_t>{32, 64, 96, 288, 1056}
                                        : std::vector<size_t>{256, 512, 2304};
  const tzero::KernelSet& ref = tzero::scalar_kernels();
  uint32_t seed = 1;
  for (size_t K : cols)
    for (size_t N : {1, 3, 17, 64})
      for (size_t T : {1, 2, 5, 9}) {
        ++c.rep.cases;
        const std::string shape = " (n_cols " + std::to_string(K) + ", n_rows " +
                                  std::to_string(N) + ", n_tok " + std::to_string(T) + ")";
        const size_t rb = tzero::row_bytes(type, K);
        std::vector<uint8_t> w(N * rb);
        const auto wf = random_floats(N * K, seed++);
        for (size_t r = 0; r < N; ++r) tzero::quantize_row(type, &wf[r * K], &w[r * rb], K);
        const auto xf = random_floats(T * K, seed++);
        tzero::MatmulScratch scratch;
        const void* x = tzero::quantize_activations(ref, type, xf.data(), T, K, scratch);
        const size_t x_bytes = x == static_cast<const void*>(xf.data())
                                   ? T * K * sizeof(float)
                                   : (bs == 32 ? T * (K / 32) * sizeof(tzero::ActQ8)
                                               : T * (K / 256) * sizeof(tzero::ActQ8K));
        const size_t x_tok = x_bytes / T;
        std::vector<float> y_ref(T * N), y(T * N), y2(T * N);
        ref.gemm_for(type)(w.data(), rb, x, K, N, T, y_ref.data(), N);
        fn(w.data(), rb, x, K, N, T, y.data(), N);
        std::string where;
        // Repeated calls.
        fn(w.data(), rb, x, K, N, T, y2.data(), N);
        if (!same(y.data(), y2.data(), N, T, &where))
          return (void)c.unstable("repeated call" + shape + ": " + where);
        // Thread splits of the rows, as the engine's matmul makes them.
        for (int threads : {2, 3, 4, 7}) {
          tzero::ThreadPool pool(threads);
          std::fill(y2.begin(), y2.end(), 0.0f);
          pool.run(N, [&](size_t r0, size_t r1) {
            fn(w.data() + r0 * rb, rb, x, K, r1 - r0, T, y2.data() + r0, N);
          });
          if (!same(y.data(), y2.data(), N, T, &where))
            return (void)c.unstable(std::to_string(threads) + "-thread split" + shape + ": " +
                                    where);
        }
        // Batch mates: each token alone must give its bits in the batch.
        for (size_t t = 0; t < T; ++t) {
          std::vector<float> alone(N);
          fn(w.data(), rb, static_cast<const uint8_t*>(x) + t * x_tok, K, N, 1, alone.data(), 1);
          if (std::memcmp(alone.data(), &y[t * N], N * 4) != 0)
            return (void)c.unstable("token " + std::to_string(t) + " alone vs in a batch" + shape);
        }
        // Alignment: weights and activations off their usual (vector-aligned) addresses by as
        // much as the engine allows: weight rows are only element-aligned (4 bytes for f32, 2
        // for f16/bf16 and the 34/18/144/210-byte quantized blocks), activations 4-aligned.
        const size_t w_off = type == TensorType::F32 ? 4 : 2;
        std::vector<uint8_t> wbuf(w.size() + w_off), xbuf(x_bytes + 4);
        std::memcpy(wbuf.data() + w_off, w.data(), w.size());
        std::memcpy(xbuf.data() + 4, x, x_bytes);
        fn(wbuf.data() + w_off, rb, xbuf.data() + 4, K, N, T, y2.data(), N);
        if (!same(y.data(), y2.data(), N, T, &where))
          return (void)c.unstable("misaligned buffers" + shape + ": " + where);
        c.compare_reference(y_ref.data(), y.data(), y.size());
      }
}

template <typename Fn, typename RefFn, typename Call>
void check_elementwise(Checker& c, Fn fn, RefFn ref, Call call) {
  for (size_t n : {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 1000, 4096}) {
    ++c.rep.cases;
    const auto a = random_floats(n + 1, uint32_t(n)), b = random_floats(n + 1, uint32_t(n + 7));
    std::vector<float> y_ref(n), y(n), y2(n + 1);
    call(ref, a.data(), b.data(), n, y_ref.data());
    call(fn, a.data(), b.data(), n, y.data());
    std::string where;
    call(fn, a.data(), b.data(), n, y2.data());
    if (std::memcmp(y.data(), y2.data(), n * 4) != 0)
      return (void)c.unstable("repeated call (n " + std::to_string(n) + ")");
    std::vector<float> a1(n + 1), b1(n + 1);  // shifted by one float
    std::memcpy(a1.data() + 1, a.data(), n * 4);
    std::memcpy(b1.data() + 1, b.data(), n * 4);
    call(fn, a1.data() + 1, b1.data() + 1, n, y2.data() + 1);
    if (std::memcmp(y.data(), y2.data() + 1, n * 4) != 0)
      return (void)c.unstable("misaligned buffers (n " + std::to_string(n) + ")");
    c.compare_reference(y_ref.data(), y.data(), n);
  }
}

}  // namespace

OpCheckReport check_op(const std::string& op, const std::string& name) {
  Checker c;
  c.rep.op = op;
  c.rep.name = name;
  if (auto t = tzero::matmul_op_type(op)) {
    GemmKernel fn = tzero::find_gemm(op, name);
    if (!fn) throw std::invalid_argument("no kernel '" + name + "' registered for " + op);
    check_gemm(c, *t, fn);
  } else if (op == "rmsnorm") {
    RmsNormKernel fn = tzero::find_rmsnorm(name);
    if (!fn) throw std::invalid_argument("no kernel '" + name + "' registered for rmsnorm");
    check_elementwise(c, fn, tzero::scalar_kernels().rmsnorm,
                      [](RmsNormKernel k, const float* x, const float* w, size_t n, float* out) {
                        k(x, w, 1e-5f, n, out);
                      });
  } else if (op == "swiglu") {
    SwigluKernel fn = tzero::find_swiglu(name);
    if (!fn) throw std::invalid_argument("no kernel '" + name + "' registered for swiglu");
    check_elementwise(c, fn, tzero::scalar_kernels().swiglu,
                      [](SwigluKernel k, const float* g, const float* u, size_t n, float* out) {
                        k(g, u, n, out);
                      });
  } else {
    throw std::invalid_argument("unknown op '" + op + "' (matmul.<type>, rmsnorm, swiglu)");
  }
  return c.rep;
}

}  // namespace tzero
