// Pipeline parallelism over MPI ranks (docs/DISTRIBUTED.md): a model's layers split into
// contiguous ranges, rank r running layers [plan.begin(r), plan.end(r)) with the weights and the
// KV cache of those layers only. Rank 0 holds everything else (tokenizer, scheduler, sampler,
// server, embedding, output head); the residual stream crosses the ranks as float32, copied
// exactly, so each rank computes exactly the ops the single process computes for its layers, in
// the same order: the bits are the single process's for any N and any split.
//
// Every message travels a ring, rank 0 -> 1 -> ... -> N-1 -> 0, in order. Rank 0 may send up to
// N passes before the first comes back (micro-batches: Forward::launch_batch), each rank running
// them one after another in the order sent, so every rank sees the ops of the passes in the
// order one process would run them. A rank that fails a message turns it into an error
// that names it, which the later ranks pass on; rank 0 throws it as a tzero::Error. A pass that
// does not come back within the rank timeout breaks the pipeline: every later use throws, and
// stop_ranks() then ends the whole job (MPI_Abort) instead of waiting for a rank that hangs.
//
//   rank 0: Session::open -> Pipeline::open -> Forward::set_remote_stages(pipeline->stages(...))
//   ranks 1..N-1: serve_stages() until rank 0's stop_ranks()
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/stage_plan.h"
#include "model/forward.h"
#include "model/weights.h"

namespace tzero::dist {

struct PipelineOptions {
  double rank_timeout_s = 60;  // most seconds a pass may take on the other ranks
  int micro_batches = 0;       // most passes in flight (0: one per rank)
  int n_threads = 1;           // each rank's threads
  std::string kernels = "auto";
  std::vector<std::string> op_overrides;
  bool fast = false;   // --mode fast
  bool repack = true;  // lay the matrices out for the kernels (Session::open's rule)
};

struct Ring;  // the ring's connection (pipeline.cpp)

class Pipeline {
 public:
  // Opens `model` (rank 0's part of `path`: load_stage) on ranks 1..N-1 of the world, split by
  // `plan`: each maps the file, checks it is rank 0's (size and header), and reads its own
  // layers into memory (load_stage). Throws tzero::Error naming the rank (and host) that failed.
  // Needs world().several().
  static std::shared_ptr<Pipeline> open(const Model& model, const std::string& path,
                                        const StagePlan& plan, const PipelineOptions& options);
  ~Pipeline();  // closes the model on the other ranks
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const StagePlan& plan() const { return plan_; }
  int local_end() const { return plan_.end(0); }
  // The stages after rank 0's for a Forward of n_ctx positions and n_batch tokens a pass
  // (Forward::set_remote_stages). Each Forward has its own, and its own KV caches there.
  std::unique_ptr<RemoteStages> stages(int n_ctx, int n_batch);
  // With expert parallelism (plan().n_expert > 0), a Forward's calls to the experts, which all
  // live on ranks 1..N-1 (Forward::set_remote_experts, distributed/experts.h); null without.
  std::shared_ptr<RemoteExperts> remote_experts() const;

 private:
  Pipeline() = default;
  std::shared_ptr<Ring> ring_;
  uint64_t id_ = 0;              // 0: not open on the other ranks
  const HParams* hp_ = nullptr;  // rank 0's model's
  PipelineOptions options_;
  StagePlan plan_;
};

// Ranks 1..N-1: runs the messages of the ring until rank 0 stops it, then finalizes MPI.
// Returns the process's exit status.
int serve_stages();
// Rank 0, at its end: the other ranks stop and MPI finalizes; after a fault (a rank that hung,
// a message lost), the whole job ends through MPI_Abort with `fault_code` instead. Nothing in a
// world of one. Called once (main's exit path).
void stop_ranks(int fault_code = 3);

// What crossed the ring so far (rank 0, docs/BENCHMARKS.md): passes, their rows (tokens), and
// their bytes, which every hop of the ring (each boundary between two ranks) carries once.
// most_in_flight: the most passes of one Forward out at once (micro-batches: up to N).
struct RingTraffic {
  uint64_t passes = 0, rows = 0, pass_bytes = 0, most_in_flight = 0;
};
RingTraffic ring_traffic();

}  // namespace tzero::dist
