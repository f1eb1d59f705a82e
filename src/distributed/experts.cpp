// Expert parallelism over MPI ranks (distributed/experts.h).
#include "distributed/experts.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "base/error.h"
#include "distributed/transport.h"

namespace tzero::dist {
namespace {

std::mutex g_traffic_mu;
ExpertTraffic g_traffic;

// This process's requests to each rank are numbered (1, 2, ...), and each answer carries its
// request's number: an answer left behind (its request timed out, or its layer threw before it
// was taken) is recognised and dropped by the next request to that rank, never taken for
// another's. (Serialised as every MPI call: rank 0's ring mutex; one thread on the others.)
std::map<int, uint64_t> g_last_request;
const void* g_asking = nullptr;  // the ExpertCalls with requests out (one at a time)

class ExpertCalls final : public RemoteExperts {
 public:
  ExpertCalls(uint64_t model_id, const StagePlan& plan, const HParams& hp, double timeout_s,
              std::mutex* serialise, std::function<void(const std::string&)> on_broken)
      : model_id_(model_id),
        plan_(plan),
        n_embd_(size_t(hp.n_embd)),
        timeout_s_(timeout_s),
        serialise_(serialise),
        on_broken_(std::move(on_broken)) {}
  ~ExpertCalls() override {
    std::unique_lock<std::mutex> lock = hold();
    if (g_asking == this) g_asking = nullptr;
  }

  void send(int il, const float* x, float* ids, size_t n_tok, size_t k) override {
    const int me = world().rank, n_ranks = plan_.n_ranks();
    const size_t E = n_embd_;
    std::vector<Out> by_rank(static_cast<size_t>(n_ranks));
    for (size_t s = 0; s < n_tok * k; ++s) {
      const int e = int(ids[s]);
      const int rank = plan_.expert_owner(e);
      if (rank == me) continue;
      by_rank[size_t(rank)].slots.push_back(uint32_t(s));
      by_rank[size_t(rank)].experts.push_back(int32_t(e));
    }
    std::unique_lock<std::mutex> lock = hold();
    check(!broken_, "the experts on other MPI ranks failed earlier: " + broken_why_);
    // (A layer that threw between send and receive left its requests: their answers are
    // dropped when they come.)
    out_.clear();
    check(g_asking == nullptr || g_asking == this,
          "internal: two forward passes ask other MPI ranks for experts at once");
    for (int rank = 0; rank < n_ranks; ++rank) {
      Out& o = by_rank[size_t(rank)];
      if (o.slots.empty()) continue;
      o.rank = rank;
      o.number = ++g_last_request[rank];
      // Each token's input row once, however many of its slots go to this rank (slots of a
      // token are consecutive).
      rows_.clear();  // (m, n_embd)
      row_of_.resize(o.slots.size());
      size_t last = SIZE_MAX;
      for (size_t i = 0; i < o.slots.size(); ++i) {
        const size_t t = size_t(o.slots[i]) / k;
        if (t != last) rows_.insert(rows_.end(), x + t * E, x + (t + 1) * E);
        last = t;
        row_of_[i] = int32_t(rows_.size() / E - 1);
      }
      WireWriter w;
      w.put(o.number);
      w.put(model_id_);
      w.put(int32_t(il));
      w.put_vector(o.experts);
      w.put_vector(row_of_);
      w.put_vector(rows_);
      const size_t bytes = w.bytes().size();
      post(rank, std::move(w.bytes()), Channel::expert_request);
      for (const uint32_t s : o.slots) ids[s] = -1;  // left out here
      {
        std::lock_guard<std::mutex> t(g_traffic_mu);
        g_traffic.requests += 1;
        g_traffic.slots += o.slots.size();
        g_traffic.bytes += bytes;
      }
      out_.push_back(std::move(o));
      g_asking = this;
    }
  }

  void receive(int, float* ids, float* down, size_t, size_t) override {
    const size_t E = n_embd_;
    std::unique_lock<std::mutex> lock = hold();
    const std::vector<Out> outs = std::move(out_);
    out_.clear();
    g_asking = nullptr;
    for (const Out& o : outs)  // (first: the layer's ids are whole again whatever follows)
      for (size_t i = 0; i < o.slots.size(); ++i) ids[o.slots[i]] = float(o.experts[i]);
    std::string failed;  // every answer is taken, the first error thrown after
    for (const Out& o : outs) {
      std::vector<uint8_t> back;
      uint64_t number = 0;
      try {
        do {  // (answers to earlier requests, left behind, are dropped)
          back = dist::receive(o.rank, timeout_s_, Channel::expert_answer);
          number = WireReader(back).get<uint64_t>();
        } while (number < o.number);
      } catch (const Error& e) {
        // Its answer, if it comes, will be dropped (numbered). Rank 0 breaks the ring (the job
        // ends); another rank fails this pass, and rank 0 hears of it through the ring.
        const std::string why =
            "waiting for rank " + std::to_string(o.rank) + "'s experts: " + e.what();
        if (on_broken_) {
          broken_ = true;
          broken_why_ = why;
          on_broken_(why);
        }
        throw Error("the experts on other MPI ranks failed: " + why);
      }
      check(number == o.number, "internal: an expert answer to a request never sent");
      {
        std::lock_guard<std::mutex> t(g_traffic_mu);
        g_traffic.bytes += back.size();
      }
      WireReader r(back);
      r.get<uint64_t>();
      if (r.get<uint8_t>() == 0) {
        if (failed.empty()) failed = r.get_string();
        continue;
      }
      const std::vector<float> rows = r.get_vector<float>();
      check(rows.size() == o.slots.size() * E, "internal: an expert answer of another size");
      for (size_t i = 0; i < o.slots.size(); ++i)
        std::memcpy(down + size_t(o.slots[i]) * E, &rows[i * E], E * sizeof(float));
    }
    if (!failed.empty()) throw Error(failed);
  }

 private:
  // The slots sent to one rank: the request's number, their indices (token * k + rank j) and
  // experts.
  struct Out {
    int rank = 0;
    uint64_t number = 0;
    std::vector<uint32_t> slots;
    std::vector<int32_t> experts;
  };
  std::unique_lock<std::mutex> hold() {
    return serialise_ ? std::unique_lock<std::mutex>(*serialise_) : std::unique_lock<std::mutex>();
  }

  uint64_t model_id_;
  StagePlan plan_;
  size_t n_embd_;
  double timeout_s_;
  std::mutex* serialise_;
  std::function<void(const std::string&)> on_broken_;
  bool broken_ = false;
  std::string broken_why_;
  std::vector<Out> out_;         // the requests of the layer in progress, in the order sent
  std::vector<float> rows_;      // a request's input rows, a token's once
  std::vector<int32_t> row_of_;  // each slot's row among them
};

}  // namespace

ExpertTraffic expert_traffic() {
  std::lock_guard<std::mutex> lock(g_traffic_mu);
  return g_traffic;
}

std::shared_ptr<RemoteExperts> remote_experts(uint64_t model_id, const StagePlan& plan,
                                              const HParams& hp, double timeout_s,
                                              std::mutex* serialise,
                                              std::function<void(const std::string&)> on_broken) {
  return std::make_shared<ExpertCalls>(model_id, plan, hp, timeout_s, serialise,
                                       std::move(on_broken));
}

ExpertServer::ExpertServer(const Model& model, const StagePlan& plan, int rank, ThreadPool& pool,
                           const KernelSet& kernels, bool fast)
    : model_(model), experts_(plan.experts(rank)) {
  slots_ = std::make_unique<ExpertSlots>(model.hparams(), layout_);
  backend_ = std::make_unique<CpuBackend>(model.hparams(), layout_, pool, kernels, fast, 1);
}

ExpertServer::~ExpertServer() = default;

std::vector<uint8_t> ExpertServer::answer(uint64_t number, WireReader& r) {
  const HParams& hp = model_.hparams();
  const int il = r.get<int32_t>();
  const std::vector<int32_t> experts = r.get_vector<int32_t>(), row_of = r.get_vector<int32_t>();
  const std::vector<float> rows = r.get_vector<float>();
  const size_t n = experts.size(), E = size_t(hp.n_embd), m = rows.size() / E;
  check(il >= 0 && il < hp.n_layer && model_.layers()[size_t(il)].gate_exps.n_expert > 0,
        "internal: an expert request for a layer without experts");
  check(row_of.size() == n && rows.size() == m * E, "internal: an expert request of another shape");
  ids_.resize(n);
  x_.resize(n * E);  // (n, n_embd) each slot's input row
  for (size_t i = 0; i < n; ++i) {
    check(experts[i] >= experts_.first && experts[i] < experts_.second,
          "internal: a request for an expert this rank does not hold");
    check(row_of[i] >= 0 && size_t(row_of[i]) < m, "internal: an expert request of another shape");
    ids_[i] = float(experts[i]);
    std::memcpy(&x_[i * E], &rows[size_t(row_of[i]) * E], E * sizeof(float));
  }
  BackendOps& o = *backend_;
  o.upload(slots_->ids(), ids_.data(), n);
  o.upload(slots_->x(), x_.data(), n);
  slots_->run(o, model_.layers()[size_t(il)], n);
  WireWriter w;
  w.put(number);
  w.put(uint8_t(1));
  w.put_array(o.host_rows(slots_->down()), n * E);
  return std::move(w.bytes());
}

}  // namespace tzero::dist
