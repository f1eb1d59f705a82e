// Pipeline parallelism over MPI ranks (distributed/pipeline.h).
#include "distributed/pipeline.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include "backend/backends.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/thread_pool.h"
#include "distributed/experts.h"
#include "distributed/transport.h"
#include "distributed/wire.h"
#include "kernels/kernel_set.h"
#include "ops/registry.h"

namespace tzero::dist {

// ---- rank 0: the ring ----------------------------------------------------------------------

struct Ring {
  std::mutex mu;
  uint64_t next_id = 1;
  bool broken = false;  // a message was lost or late: no orderly stop any more
  std::string broken_why;
  RingTraffic traffic;
  // Messages go round in the order posted and come back in that order: the n-th message back
  // answers ticket n. Answers that arrive while an older ticket's owner waits for a later one
  // are kept for their owners.
  uint64_t n_posted = 0, n_back = 0;
  std::map<uint64_t, std::vector<uint8_t>> early;

  // Sends msg to rank 1 without waiting for it to come back; returns its ticket.
  uint64_t post(std::vector<uint8_t> msg) {
    std::lock_guard<std::mutex> lock(mu);
    check(!broken, "the pipeline over MPI ranks failed earlier: " + broken_why);
    try {
      dist::post(1, std::move(msg));
    } catch (const Error& e) {
      fail(e, "");
    }
    return ++n_posted;
  }

  // Waits for ticket's message to come back from rank N-1. Throws tzero::Error with a rank's
  // error (the ring stays usable), or for a deadline missed (the ring breaks). `limit` names
  // the deadline in the error ("--rank-timeout 60 s").
  std::vector<uint8_t> collect(uint64_t ticket, double timeout_s, const std::string& limit) {
    std::lock_guard<std::mutex> lock(mu);
    check(!broken, "the pipeline over MPI ranks failed earlier: " + broken_why);
    check(ticket > 0 && ticket <= n_posted, "internal: a ticket the ring never gave");
    while (!early.count(ticket)) {
      try {
        early.emplace(++n_back, receive(world().size - 1, timeout_s));
      } catch (const Error& e) {
        fail(e, " within " + limit);
      }
    }
    std::vector<uint8_t> back = std::move(early.at(ticket));
    early.erase(ticket);
    WireReader r(back);
    if (r.get<MsgKind>() == MsgKind::error) throw Error(r.get_string());
    return back;
  }

  // post, then collect.
  std::vector<uint8_t> round_trip(std::vector<uint8_t> msg, double timeout_s,
                                  const std::string& limit) {
    const uint64_t ticket = post(std::move(msg));
    return collect(ticket, timeout_s, limit);
  }

 private:
  // The ring breaks (mu held). within: the deadline missed (" within --rank-timeout 3 s"), or "".
  [[noreturn]] void fail(const Error& e, const std::string& within) {
    const World w = world();
    broken = true;
    const std::string ranks = w.size == 2 ? "rank 1" : "ranks 1-" + std::to_string(w.size - 1);
    broken_why = "a message to " + ranks + " did not come back" + within +
                 ": a rank hangs or died (" + e.what() + ")";
    throw Error("the pipeline over MPI ranks failed: " + broken_why);
  }
};

namespace {

// Never destroyed: stop_ranks() runs from atexit, after the statics made later are gone.
std::shared_ptr<Ring> the_ring() {
  static const auto* ring = new std::shared_ptr<Ring>(std::make_shared<Ring>());
  return *ring;
}

std::string rank_timeout(double s) {
  return "--rank-timeout " + std::to_string(int(s)) + " s";
}

// A message's round trip, for messages that must not throw (destructors): an error is printed.
// After a fault nothing is sent (stop_ranks ends the job, and the fault was said once).
void round_trip_quietly(Ring& ring, std::vector<uint8_t> msg, double timeout_s) {
  {
    std::lock_guard<std::mutex> lock(ring.mu);
    if (ring.broken) return;
  }
  try {
    ring.round_trip(std::move(msg), timeout_s, rank_timeout(timeout_s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzero: %s\n", e.what());
  }
}

std::string header_hash(const GgufFile& f) {
  return xxh128_hex(f.file_data(), f.data_offset());
}

// The stages after rank 0's, for one Forward: its batches go round the ring.
class RingStages : public RemoteStages {
 public:
  RingStages(std::shared_ptr<Ring> ring, uint64_t id, int local_end, size_t n_embd,
             double timeout_s, int depth)
      : ring_(std::move(ring)),
        id_(id),
        local_end_(local_end),
        n_embd_(n_embd),
        timeout_s_(timeout_s),
        depth_(depth) {}
  ~RingStages() override {
    WireWriter w;
    w.put(MsgKind::close_forward);
    w.put(id_);
    round_trip_quietly(*ring_, std::move(w.bytes()), timeout_s_);
  }
  int local_end() const override { return local_end_; }

  void prepare(const KvStore& kv) override {
    WireWriter w;
    w.put(MsgKind::open_store);
    put_store(w, kv);
    // (Allocating a large pool, one rank after another.)
    const double limit = std::max(timeout_s_, 600.0) * double(world().size - 1);
    ring_->round_trip(std::move(w.bytes()), limit,
                      "the KV cache's making on the ranks: " + std::to_string(int(limit)) + " s");
  }

  int depth() const override { return depth_; }

  void send(const ForwardBatch& b, const KvStore& kv, const float* residual) override {
    const size_t E = n_embd_;
    WireWriter w;
    w.put(MsgKind::pass);
    put_store(w, kv);
    w.put_vector(b.tokens);
    w.put_vector(b.pos);
    w.put_vector(b.seq);
    // Each sequence's table up to the block of its last position in the batch (attention reads
    // positions 0..pos of its own sequence only).
    std::vector<int32_t> last(b.tables.size(), 0);
    for (size_t t = 0; t < b.size(); ++t)
      last[size_t(b.seq[t])] = std::max(last[size_t(b.seq[t])], b.pos[t]);
    w.put(uint64_t(b.tables.size()));
    for (size_t s = 0; s < b.tables.size(); ++s)
      w.put_array(b.tables[s], size_t(last[s] / kv.block_size()) + 1);
    w.put_vector(b.state_slots);
    w.put_vector(b.state_saves);
    w.put_vector(b.state_copies);
    Out out;
    out.rows_at = w.bytes().size() + sizeof(uint64_t);
    out.n_rows = b.size();
    w.put_array(residual, b.size() * E);
    out.size = w.bytes().size();
    out.ticket = ring_->post(std::move(w.bytes()));
    out_.push_back(out);
    std::lock_guard<std::mutex> lock(ring_->mu);
    ring_->traffic.most_in_flight = std::max<uint64_t>(ring_->traffic.most_in_flight, out_.size());
  }

  void receive(float* residual) override {
    check(!out_.empty(), "internal: a pass received that was never sent");
    const Out out = out_.front();
    out_.pop_front();
    const std::vector<uint8_t> back =
        ring_->collect(out.ticket, timeout_s_, rank_timeout(timeout_s_));
    check(back.size() == out.size, "internal: a pipeline pass came back resized");
    std::memcpy(residual, back.data() + out.rows_at, out.n_rows * n_embd_ * sizeof(float));
    std::lock_guard<std::mutex> lock(ring_->mu);
    ring_->traffic.passes += 1;
    ring_->traffic.rows += out.n_rows;
    ring_->traffic.pass_bytes += back.size();
  }

 private:
  // The forward, and the store the message is about: the ranks mirror it (its geometry, their
  // layers) and keep the last kMaxStores stores of a Forward, dropping the oldest.
  void put_store(WireWriter& w, const KvStore& kv) {
    const uint64_t store = kv.id();
    check(!dropped_.count(store),
          "internal: a KV store the pipeline's ranks dropped was used again");
    uint64_t drop = 0;
    if (std::find(stores_.begin(), stores_.end(), store) == stores_.end()) {
      stores_.push_back(store);
      if (stores_.size() > kMaxStores) {
        drop = stores_.front();
        stores_.pop_front();
        dropped_.insert(drop);
      }
    }
    w.put(id_);
    w.put(store);
    w.put(drop);
    w.put(int32_t(kv.n_blocks()));
    w.put(int32_t(kv.block_size()));
    w.put(uint8_t(kv.type() == KvType::F16));
    w.put(int32_t(kv.n_state_slots()));
  }

  // A pass sent and not yet received: its ticket, its size, and where its rows lie.
  struct Out {
    uint64_t ticket = 0;
    size_t size = 0, rows_at = 0, n_rows = 0;
  };

  static constexpr size_t kMaxStores = 4;
  std::shared_ptr<Ring> ring_;
  uint64_t id_;
  int local_end_;
  size_t n_embd_;  // a row of the stream
  double timeout_s_;
  int depth_;  // most passes out at once
  std::deque<uint64_t> stores_;
  std::set<uint64_t> dropped_;
  std::deque<Out> out_;  // in the order sent
};

}  // namespace

std::shared_ptr<Pipeline> Pipeline::open(const Model& model, const std::string& path,
                                         const StagePlan& plan, const PipelineOptions& o) {
  const World w = world();
  check(w.several() && w.rank == 0, "internal: a pipeline opens on rank 0 of several");
  std::shared_ptr<Pipeline> p(new Pipeline());
  p->ring_ = the_ring();
  p->options_ = o;
  p->hp_ = &model.hparams();
  check(plan.n_ranks() == w.size, "internal: a plan for another number of ranks");
  p->plan_ = plan;
  {
    std::lock_guard<std::mutex> lock(p->ring_->mu);
    p->id_ = p->ring_->next_id++;
  }
  WireWriter m;
  m.put(MsgKind::open_model);
  m.put(p->id_);
  m.put_string(TZ_VERSION);
  m.put_string(path);
  m.put(uint64_t(model.gguf().file_size()));
  m.put_string(header_hash(model.gguf()));
  m.put(int32_t(o.n_threads));
  m.put_string(o.kernels);
  m.put(uint64_t(o.op_overrides.size()));
  for (const std::string& s : o.op_overrides) m.put_string(s);
  m.put(uint8_t(o.fast));
  m.put(uint8_t(o.repack));
  m.put(o.rank_timeout_s);
  m.put(int32_t(o.micro_batches > 0 ? o.micro_batches : w.size));
  m.put_vector(p->plan_.first);
  m.put(int32_t(p->plan_.n_expert));
  // Opening reads each rank's layers in, one rank after another: minutes for a large model,
  // whatever the pass deadline.
  const double open_timeout = std::max(o.rank_timeout_s, 1800.0) * double(w.size - 1);
  const size_t sent = m.bytes().size();
  try {
    // Each rank appends its rank and the hash of its layers' bytes (load_stage); rank 0 checks
    // them against its own file: a same-header file of other weights is named, never run.
    const std::vector<uint8_t> back = p->ring_->round_trip(
        std::move(m.bytes()), open_timeout,
        "the model's opening on the ranks: " + std::to_string(int(open_timeout)) + " s");
    check(back.size() > sent, "internal: no layer hashes came back");
    const std::vector<uint8_t> tail(back.begin() + std::ptrdiff_t(sent), back.end());
    WireReader r(tail);
    // (Read with the file's hash, which the fingerprint then has: one read of the file.)
    const std::vector<std::string> ours = ranks_layers_xxh128(model, plan);
    for (int k = 1; k < w.size; ++k) {
      const int rank = r.get<int32_t>();
      const std::string host = r.get_string(), hash = r.get_string();
      check(rank >= 1 && rank < w.size, "internal: a layer hash of no rank");
      const std::string& mine = ours[size_t(rank)];
      const auto [e0, e1] = plan.experts(rank);
      check(hash == mine,
            "rank " + std::to_string(rank) + " (" + host + "): " + path +
                " there has other weights in layers " + std::to_string(plan.begin(rank)) + "-" +
                std::to_string(plan.end(rank) - 1) +
                (e1 > e0 ? " or experts " + std::to_string(e0) + "-" + std::to_string(e1 - 1)
                         : std::string()) +
                " than rank 0's (xxh128 " + hash + ", here " + mine +
                "): every host needs the same file at the same path");
    }
  } catch (const Error&) {
    WireWriter c;  // the ranks before the one that failed opened it
    c.put(MsgKind::close_model);
    c.put(p->id_);
    p->id_ = 0;
    round_trip_quietly(*p->ring_, std::move(c.bytes()), o.rank_timeout_s);
    throw;
  }
  std::fprintf(stderr, "tzero: %s over %d MPI ranks: %s\n", path.c_str(), w.size,
               p->plan_.describe().c_str());
  return p;
}

Pipeline::~Pipeline() {
  if (id_ == 0) return;
  WireWriter w;
  w.put(MsgKind::close_model);
  w.put(id_);
  round_trip_quietly(*ring_, std::move(w.bytes()), options_.rank_timeout_s);
}

std::unique_ptr<RemoteStages> Pipeline::stages(int n_ctx, int n_batch) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(ring_->mu);
    id = ring_->next_id++;
  }
  WireWriter w;
  w.put(MsgKind::open_forward);
  w.put(id);
  w.put(id_);
  w.put(int32_t(n_ctx));
  w.put(int32_t(n_batch));
  ring_->round_trip(std::move(w.bytes()), options_.rank_timeout_s,
                    rank_timeout(options_.rank_timeout_s));
  // By default one pass per rank: rank 0 computes its layers of the next while the others run
  // theirs of earlier ones.
  const int depth = options_.micro_batches > 0 ? options_.micro_batches : world().size;
  return std::make_unique<RingStages>(ring_, id, local_end(), size_t(hp_->n_embd),
                                      options_.rank_timeout_s, depth);
}

std::shared_ptr<RemoteExperts> Pipeline::remote_experts() const {
  if (plan_.n_expert == 0) return nullptr;
  std::shared_ptr<Ring> ring = ring_;
  return dist::remote_experts(id_, plan_, *hp_, options_.rank_timeout_s, &ring_->mu,
                              [ring](const std::string& why) {  // (the ring's mutex held)
                                ring->broken = true;
                                ring->broken_why = why;
                              });
}

RingTraffic ring_traffic() {
  const std::shared_ptr<Ring> ring = the_ring();
  std::lock_guard<std::mutex> lock(ring->mu);
  return ring->traffic;
}

void stop_ranks(int fault_code) {
  const World w = world();
  if (w.rank != 0) return;
  if (!w.several()) {  // mpirun -np 1, or no MPI: nothing to stop
    finalize();
    return;
  }
  const std::shared_ptr<Ring> ring = the_ring();
  bool broken;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(ring->mu);
    broken = ring->broken;
    why = ring->broken_why;
  }
  if (!broken) {
    WireWriter s;
    s.put(MsgKind::stop);
    try {
      ring->round_trip(std::move(s.bytes()), 30, "the stop's 30 s");
    } catch (const Error& e) {
      broken = true;
      why = e.what();
    }
  }
  if (broken) {
    std::fflush(stdout);
    std::fprintf(stderr, "tzero: ending the MPI job: %s\n", why.c_str());
    abort_job(fault_code);
  }
  finalize();
}

// ---- ranks 1..N-1 --------------------------------------------------------------------------

namespace {

struct RankModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;
  KernelSet kernels = scalar_kernels();
  bool fast = false;
  StagePlan plan;                         // this rank's layers: [plan.begin(rank), plan.end(rank))
  std::unique_ptr<ExpertServer> experts;  // expert parallelism: this rank's experts
};

struct RankForward {
  uint64_t model = 0;
  std::unique_ptr<Forward> fwd;
  std::map<uint64_t, std::unique_ptr<KvStore>> stores;  // by rank 0's KvStore::id
};

class Stages {
 public:
  explicit Stages(World w) : w_(w) {}
  // How long a message of this rank may wait to be taken by the next: a pass's deadline for
  // each pass rank 0 may launch before it collects (micro-batches: its own layers of each).
  double send_timeout_s() const { return timeout_s_ * double(depth_); }

  // Runs one message; a pass's residual rows are replaced in msg by this rank's output.
  void handle(std::vector<uint8_t>& msg) {
    WireReader r(msg);
    switch (r.get<MsgKind>()) {
      case MsgKind::open_model:
        open_model(r, msg);
        break;
      case MsgKind::close_model: {
        const uint64_t id = r.get<uint64_t>();
        for (auto it = forwards_.begin(); it != forwards_.end();)  // (none should be left)
          it = it->second.model == id ? forwards_.erase(it) : std::next(it);
        models_.erase(id);
        break;
      }
      case MsgKind::open_forward: {
        const uint64_t id = r.get<uint64_t>(), model = r.get<uint64_t>();
        const int n_ctx = r.get<int32_t>(), n_batch = r.get<int32_t>();
        const RankModel& m = *models_.at(model);
        RankForward f;
        f.model = model;
        f.fwd = make_forward(*m.model, *m.pool, {n_ctx, n_batch, m.kernels, m.fast, 0});
        if (m.plan.n_expert > 0)
          f.fwd->set_remote_experts(
              remote_experts(model, m.plan, m.model->hparams(), timeout_s_, nullptr));
        forwards_[id] = std::move(f);
        break;
      }
      case MsgKind::close_forward:
        forwards_.erase(r.get<uint64_t>());
        break;
      case MsgKind::open_store:
        store(r);
        break;
      case MsgKind::pass:
        pass(r, msg);
        break;
      default:
        throw Error("internal: an unknown pipeline message");
    }
  }

  // Answers a request for this rank's experts when one has come (transport's work while
  // waiting: distributed/experts.h); false when none had.
  bool serve_expert_request() {
    int from = 0;
    std::vector<uint8_t> msg;
    if (!try_receive_any(Channel::expert_request, &from, &msg)) return false;
    std::vector<uint8_t> answer;
    WireReader r(msg);
    const uint64_t number = r.get<uint64_t>();
    try {
      const auto it = models_.find(r.get<uint64_t>());
      check(it != models_.end() && it->second->experts,
            "internal: a request for experts of a model this rank does not hold");
      answer = it->second->experts->answer(number, r);
    } catch (const std::exception& e) {
      WireWriter err;
      err.put(number);
      err.put(uint8_t(0));
      err.put_string("rank " + std::to_string(w_.rank) + " (" + host_name() +
                     "), its experts: " + e.what());
      answer = std::move(err.bytes());
    }
    post(from, std::move(answer), Channel::expert_answer);
    return true;
  }

 private:
  void open_model(WireReader& r, std::vector<uint8_t>& msg) {
    const uint64_t id = r.get<uint64_t>();
    const std::string version = r.get_string();
    check(version == TZ_VERSION, "this rank's tzero is " + std::string(TZ_VERSION) +
                                     ", rank 0's is " + version + ": run one build everywhere");
    const std::string path = r.get_string();
    const uint64_t size = r.get<uint64_t>();
    const std::string header = r.get_string();
    auto m = std::make_unique<RankModel>();
    const int n_threads = r.get<int32_t>();
    const std::string kernels = r.get_string();
    std::vector<std::string> overrides(size_t(r.get<uint64_t>()));
    for (std::string& s : overrides) s = r.get_string();
    m->fast = r.get<uint8_t>() != 0;
    const bool repack = r.get<uint8_t>() != 0;
    timeout_s_ = r.get<double>();
    depth_ = std::max(1, r.get<int32_t>());
    StagePlan plan;
    plan.first = r.get_vector<int>();
    plan.n_expert = r.get<int32_t>();
    check(plan.n_ranks() == w_.size, "internal: a plan for another number of ranks");
    m->plan = plan;
    m->kernels = with_overrides(select_kernels(kernels), overrides);
    // Mapped; only this rank's layers are read, into private memory (load_stage).
    auto file = std::make_unique<GgufFile>(path, MappedFile::Load::Map);
    check(file->file_size() == size,
          path + " here is not rank 0's file: " + std::to_string(file->file_size()) + " bytes, " +
              std::to_string(size) + " there (every host needs the same file at the same path)");
    check(header_hash(*file) == header,
          path +
              " here is not rank 0's file: its metadata or tensor table differs (every host "
              "needs the same file at the same path)");
    StagePart part = load_stage(std::move(file), plan, w_.rank, repack ? &m->kernels : nullptr);
    m->model = std::move(part.model);
    m->pool = std::make_unique<ThreadPool>(n_threads);
    if (plan.n_expert > 0)
      m->experts =
          std::make_unique<ExpertServer>(*m->model, plan, w_.rank, *m->pool, m->kernels, m->fast);
    models_[id] = std::move(m);
    WireWriter tail;  // rank 0 checks the hash against its own file
    tail.put(int32_t(w_.rank));
    tail.put_string(host_name());
    tail.put_string(part.weights_xxh128);
    msg.insert(msg.end(), tail.bytes().begin(), tail.bytes().end());
  }

  // A message's forward and store (RingStages::put_store): the mirror, made when first named.
  struct Target {
    RankForward* f;
    const RankModel* m;
    KvStore* kv;
  };
  Target store(WireReader& r) {
    RankForward& f = forwards_.at(r.get<uint64_t>());
    const RankModel& m = *models_.at(f.model);
    const uint64_t id = r.get<uint64_t>(), drop = r.get<uint64_t>();
    const int n_blocks = r.get<int32_t>(), block_size = r.get<int32_t>();
    const KvType type = r.get<uint8_t>() ? KvType::F16 : KvType::F32;
    const int n_slots = r.get<int32_t>();
    if (drop) f.stores.erase(drop);
    std::unique_ptr<KvStore>& kv = f.stores[id];
    if (!kv)
      kv = std::make_unique<KvStore>(m.model->hparams(), n_blocks, block_size, type,
                                     std::max(n_slots, 1),
                                     LayerRange{m.plan.begin(w_.rank), m.plan.end(w_.rank)});
    check(kv->n_blocks() == n_blocks && kv->block_size() == block_size,
          "internal: a KV store changed its geometry");
    return {&f, &m, kv.get()};
  }

  void pass(WireReader& r, std::vector<uint8_t>& msg) {
    const Target at = store(r);
    RankForward& f = *at.f;
    const RankModel& m = *at.m;
    const int n_blocks = at.kv->n_blocks();
    KvStore* kv = at.kv;
    ForwardBatch& b = batch_;
    b.clear();
    b.tokens = r.get_vector<int32_t>();
    b.pos = r.get_vector<int32_t>();
    b.seq = r.get_vector<int32_t>();
    const uint64_t n_tables = r.get<uint64_t>();
    check(n_tables <= b.size(), "internal: more tables than tokens in a pass");
    tables_.resize(size_t(n_tables));
    for (std::vector<int32_t>& t : tables_) {
      t = r.get_vector<int32_t>();
      for (const int32_t block : t)
        check(block >= 0 && block < n_blocks, "internal: a block table out of the store");
      b.tables.push_back(t.data());
    }
    b.state_slots = r.get_vector<int32_t>();
    b.state_saves = r.get_vector<ForwardBatch::StateSave>();
    b.state_copies = r.get_vector<ForwardBatch::StateCopy>();
    const size_t n_rows = size_t(r.get<uint64_t>());
    const size_t E = size_t(m.model->hparams().n_embd);
    check(n_rows == b.size() * E && b.pos.size() == b.size() && b.seq.size() == b.size(),
          "internal: a pipeline pass of another shape");
    for (const int32_t s : b.seq)
      check(s >= 0 && size_t(s) < tables_.size(), "internal: a sequence without a table");
    check(n_rows <= (msg.size() - r.offset()) / sizeof(float),
          "internal: a pipeline pass cut short");
    uint8_t* rows = msg.data() + r.offset();  // (n_tokens, n_embd) float32, unaligned
    residual_.resize(n_rows);
    std::memcpy(residual_.data(), rows, n_rows * sizeof(float));
    f.fwd->eval_batch_stage(b, *kv, m.plan.begin(w_.rank), m.plan.end(w_.rank), residual_.data());
    std::memcpy(rows, residual_.data(), n_rows * sizeof(float));  // passed on in place
  }

  World w_;
  double timeout_s_ = 60;
  int depth_ = 1;  // most passes in flight
  std::map<uint64_t, std::unique_ptr<RankModel>> models_;
  std::map<uint64_t, RankForward> forwards_;
  ForwardBatch batch_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<float> residual_;
};

}  // namespace

int serve_stages() {
  // SIGINT and SIGTERM (mpirun passes them to every rank) are rank 0's to act on: it stops its
  // server gracefully, then stops these ranks through the ring. A rank that must go now is
  // killed (mpirun's SIGKILL), which ends the job.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  const World w = world();
  const int prev = w.rank - 1, next = (w.rank + 1) % w.size;
  Stages stages(w);
  set_work_while_waiting([&stages] { return stages.serve_expert_request(); });
  while (true) {
    std::vector<uint8_t> msg;
    MsgKind kind = MsgKind::error;
    try {
      msg = receive(prev, 0);
      kind = WireReader(msg).get<MsgKind>();
      if (kind != MsgKind::error && kind != MsgKind::stop) {
        try {
          stages.handle(msg);
        } catch (const std::exception& e) {
          WireWriter err;  // the ranks after this one pass it on to rank 0
          err.put(MsgKind::error);
          err.put_string("rank " + std::to_string(w.rank) + " (" + host_name() + "): " + e.what());
          msg = std::move(err.bytes());
        }
      }
      send(next, std::move(msg), stages.send_timeout_s());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tzero: rank %d: %s: ending the MPI job\n", w.rank, e.what());
      abort_job(3);
    }
    if (kind == MsgKind::stop) break;
  }
  set_work_while_waiting(nullptr);
  finalize();
  return 0;
}

}  // namespace tzero::dist
