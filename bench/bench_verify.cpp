// The cost of verifying drafts (runtime/speculative.h): one forward pass of n rows (the last
// sampled token and n - 1 drafts, every row's logits, as Forward::eval_rows gives them) against
// a pass of one row, at the same position after `--depth` tokens of context. The sizes run
// interleaved, round after round, so a VM's slow phases fall on all of them alike; each size's
// median over the rounds is reported with its ratio to one row's median.
//   tz_bench_verify -m FILE [-t 2] [--depth 64] [--max-rows 8] [--rounds 15] [--kernels auto]
// (docs/BENCHMARKS.md, "Speculative decoding").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "runtime/session.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: tz_bench_verify -m FILE [-t 2] [--depth 64] [--max-rows 8] [--rounds 15] "
               "[--kernels auto]\n"
               "Times forward passes of 1..max-rows rows (every row's logits) at one position, "
               "interleaved, and prints each size's median and its cost against one row.\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, kernels = "auto";
  int threads = 2, depth = 64, max_rows = 8, rounds = 15;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (a == "-m")
      model = v;
    else if (a == "-t")
      threads = std::atoi(v);
    else if (a == "--depth")
      depth = std::atoi(v);
    else if (a == "--max-rows")
      max_rows = std::atoi(v);
    else if (a == "--rounds")
      rounds = std::atoi(v);
    else if (a == "--kernels")
      kernels = v;
    else
      return usage();
  }
  if (model.empty() || threads < 1 || depth < 1 || max_rows < 1 || rounds < 1) return usage();
  try {
    tzero::ComputeOptions co;
    co.n_threads = threads;
    co.kernels = kernels;
    co.n_ctx = depth + max_rows;
    co.n_batch = std::max(max_rows, 64);
    const auto session = tzero::Session::open(model, co);
    const tzero::HParams& hp = session->hparams();
    const auto fwd = session->make_forward();
    tzero::KvCache kv(hp, session->n_ctx(), co.kv_type);
    // Token ids spread over the vocabulary (a mixture of experts routes them apart).
    std::vector<int32_t> tokens(size_t(depth + max_rows));
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = int32_t((i * 7919 + 13) % size_t(hp.n_vocab));
    std::vector<float> logits(size_t(max_rows) * size_t(hp.n_vocab));  // (max_rows, n_vocab)
    for (int p = 0; p < depth; p += co.n_batch)
      fwd->eval(&tokens[size_t(p)], std::min(co.n_batch, depth - p), p, kv, logits.data());
    std::vector<std::vector<double>> ms(size_t(max_rows) + 1);
    for (int r = -1; r < rounds; ++r)  // round -1 warms up
      for (int n = 1; n <= max_rows; ++n) {
        const auto t0 = std::chrono::steady_clock::now();
        fwd->eval_rows(&tokens[size_t(depth)], n, depth, kv, logits.data());
        const double t =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (r >= 0) ms[size_t(n)].push_back(t);
      }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double one = median(ms[1]);
    std::printf("%s, %d threads, kernels %s, depth %d, %d rounds\n", model.c_str(), threads,
                session->kernels_label().c_str(), depth, rounds);
    std::printf("rows  median_ms  cost_vs_1\n");
    for (int n = 1; n <= max_rows; ++n)
      std::printf("%4d  %9.2f  %9.2f\n", n, median(ms[size_t(n)]), median(ms[size_t(n)]) / one);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tz_bench_verify: %s\n", e.what());
    return 1;
  }
  return 0;
}
