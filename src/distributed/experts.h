// Expert parallelism over MPI ranks (docs/DISTRIBUTED.md, "Expert parallelism"): the routed
// experts of every MoE layer split over ranks 1..N-1 (StagePlan::experts). A rank running a MoE
// layer (any rank of the pipeline) sends each slot whose expert lives elsewhere, its normed input
// row and its expert id, to that expert's rank, computes its own slots meanwhile, and gets the
// slots' down rows back before the combine, which it does itself in rank order (moe-v1). One
// slot's products run whole on one rank (ExpertSlots, model/arch/moe_ffn.h) and a slot's row does
// not depend on the other slots of its call, so the bits are the single process's.
//
// Messages (distributed/transport.h, channels expert_request and expert_answer):
//   request: its number (this rank's requests to that rank: 1, 2, ...), model id, layer, the
//            slots' expert ids (n), each slot's row among the input rows (n), the input rows
//            (m, n_embd) float32: each token's normed row once
//   answer:  the request's number, then 1 and the slots' down rows (n, n_embd) float32, or 0
//            and an error naming the rank. An answer to an earlier number (its request timed
//            out or was abandoned) is dropped.
// A rank answers requests whenever it waits (transport's work while waiting): for the ring, for
// its own requests' answers, or for the next rank to take a message. Rank 0 holds no experts and
// is never asked. Requests of one rank to another are answered in the order sent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "distributed/stage_plan.h"
#include "distributed/wire.h"
#include "kernels/kernel_set.h"
#include "model/arch/moe_ffn.h"
#include "model/weights.h"

namespace tzero::dist {

// What crossed for experts so far (this rank's requests): for /metrics and run --json.
struct ExpertTraffic {
  uint64_t requests = 0, slots = 0, bytes = 0;  // bytes: requests' and answers' together
};
ExpertTraffic expert_traffic();

// The caller's side (RemoteExperts) of model `model_id` (the pipeline's id of the model) split
// by `plan`, on this rank. An answer later than timeout_s seconds fails the pass (the answer is
// dropped if it comes: requests are numbered); with `on_broken` (rank 0) it breaks the caller
// for good and on_broken is told why (it breaks the ring, so that the job ends at once).
// `serialise`, when given, is held around each exchange and while on_broken runs (rank 0: the
// ring's mutex, as MPI is called from one thread at a time).
std::shared_ptr<RemoteExperts> remote_experts(
    uint64_t model_id, const StagePlan& plan, const HParams& hp, double timeout_s,
    std::mutex* serialise, std::function<void(const std::string&)> on_broken = nullptr);

// A rank's side: answers requests for the experts it holds of one model.
class ExpertServer {
 public:
  // The pool must outlive the server.
  ExpertServer(const Model& model, const StagePlan& plan, int rank, ThreadPool& pool,
               const KernelSet& kernels, bool fast);
  ~ExpertServer();
  // The answer to request `number`, read from r after its number and model id.
  std::vector<uint8_t> answer(uint64_t number, WireReader& r);

 private:
  const Model& model_;
  std::pair<int, int> experts_;
  ActLayout layout_;
  std::unique_ptr<ExpertSlots> slots_;
  std::unique_ptr<BackendOps> backend_;
  std::vector<float> ids_, x_;  // (n) a request's slots' experts, (n, n_embd) their input rows
};

}  // namespace tzero::dist
