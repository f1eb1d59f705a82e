// tzero demo axpy: where nondeterminism comes from, in one screen. Runs y += a*x_i accumulated
// by several threads into one buffer 100 times in three versions and counts distinct results.
#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "base/hash.h"
#include "cli/commands.h"
#include "demo/axpy.h"

namespace tzero::cli {

Command add_demo(CLI::App& app) {
  auto* sub = app.add_subcommand("demo", "Demonstrations of the reproducibility problem");
  auto* axpy = sub->add_subcommand("axpy", "Threads accumulating y += a*x_i: locks vs trees");
  sub->require_subcommand(1);
  struct Opts {
    int threads = 4, runs = 100, inputs = 64, length = 4096;
  };
  auto o = std::make_shared<Opts>();
  axpy->add_option("-t,--threads", o->threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  axpy->add_option("--runs", o->runs, "Runs of each version")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  axpy->add_option("--inputs", o->inputs, "Inputs x_i")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  axpy->add_option("--length", o->length, "Elements of y")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  return {sub, [o] {
            const AxpyProblem p = make_axpy_problem(size_t(o->inputs), size_t(o->length), 42);
            const std::string seq = xxh128_hex(axpy_sequential(p).data(), p.length * 4);
            std::printf("y += a * x_i: %d inputs of %d floats, %d threads, %d runs each\n\n",
                        o->inputs, o->length, o->threads, o->runs);
            std::printf("%-30s %16s %18s %14s\n", "version", "distinct results", "= sequential sum",
                        "M adds/s");
            for (AxpyVersion v :
                 {AxpyVersion::SpinLock, AxpyVersion::TurnLock, AxpyVersion::TreeReduce}) {
              std::set<std::string> results;
              const auto t0 = std::chrono::steady_clock::now();
              for (int r = 0; r < o->runs; ++r) {
                const auto y = axpy_accumulate(p, v, o->threads);
                results.insert(xxh128_hex(y.data(), y.size() * 4));
              }
              const double s =
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              const double adds = double(o->runs) * o->inputs * o->length;
              std::printf("%-30s %16zu %18s %14.1f\n", axpy_version_name(v), results.size(),
                          results.size() == 1 && *results.begin() == seq ? "yes" : "no",
                          adds / s / 1e6);
            }
            std::printf(
                "\nThe spin lock adds in arrival order, so the rounding changes with "
                "thread timing;\nthe turn lock and the tree fix the order and give one "
                "result whatever the timing.\n");
            return 0;
          }};
}

}  // namespace tzero::cli
