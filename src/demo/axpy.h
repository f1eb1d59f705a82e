// The AXPY case: y += a * x_i for many inputs x_i, accumulated by several threads into one
// shared buffer, in three versions that show where nondeterminism comes from and two ways out.
//   SpinLock:  each thread adds its inputs into y under a spin lock taken in arrival order. The
//              order of the additions, and so the rounding, depends on thread timing.
//   TurnLock:  threads are admitted strictly in thread-id order (a ticket that passes from
//              thread t to t+1). Inputs are split into contiguous ranges by thread, so the
//              additions happen in input order: the sequential sum, for any thread count.
//   TreeReduce: no locks. Each thread owns a slice of y and reduces the inputs for it with a
//              fixed pairwise tree over the inputs (not over threads): same bits for any thread
//              count, a different (better conditioned) order than the sequential sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tzero {

enum class AxpyVersion { SpinLock, TurnLock, TreeReduce };
const char* axpy_version_name(AxpyVersion v);

struct AxpyProblem {
  float a = 0.5f;
  size_t length = 0;                   // elements of y
  std::vector<std::vector<float>> xs;  // the inputs x_i, each `length` floats
};

// A reproducible random problem (normal values, so the order of additions shows in the bits).
AxpyProblem make_axpy_problem(size_t n_inputs, size_t length, uint64_t seed);

// y = sum over i of a * x_i, computed by n_threads threads with the given version.
std::vector<float> axpy_accumulate(const AxpyProblem& p, AxpyVersion v, int n_threads);

// The reference of TurnLock: ((0 + a*x_0) + a*x_1) + ... in input order, one thread.
std::vector<float> axpy_sequential(const AxpyProblem& p);

}  // namespace tzero
