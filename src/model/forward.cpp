#include "model/forward.h"

#include <cstring>

#include "base/error.h"

namespace tzero {

Forward::Forward(const Model& model, std::unique_ptr<Architecture> arch, int n_ctx, int n_batch,
                 std::unique_ptr<BackendOps> host, std::unique_ptr<BackendOps> device,
                 int device_layers)
    : hp_(model.hparams()),
      arch_(std::move(arch)),
      n_ctx_(n_ctx),
      n_batch_(n_batch),
      host_(std::move(host)),
      device_(std::move(device)),
      first_device_layer_(device_ ? hp_.n_layer - device_layers : hp_.n_layer) {
  check(host_ != nullptr, "internal: Forward needs a host backend");
  check(!device_ || (device_layers >= 1 && device_layers <= hp_.n_layer),
        "internal: device layers out of range");
}

Forward::~Forward() = default;

void Forward::trace(BackendOps& ops, std::string_view name, int layer, Act a, size_t rows,
                    int pos) {
  float* data = ops.host_rows(a);
  if (!data) {
    staging_.resize(rows * a.len);
    ops.download(a, rows, staging_.data());
    data = staging_.data();
  }
  const bool perturbed = perturb_.on && layer == perturb_.layer && name == perturb_.op &&
                         perturb_.pos >= pos && perturb_.pos < pos + int(rows);
  if (perturbed) {
    float* x = data + size_t(perturb_.pos - pos) * a.len;
    uint32_t bits;
    std::memcpy(&bits, x, 4);
    bits ^= 1u;
    std::memcpy(x, &bits, 4);
    if (data == staging_.data()) ops.upload(a, data, rows);
  }
  if (trace_) trace_(name, layer, data, rows, a.len, pos);
}

const ForwardBatch& Forward::single_batch(const int32_t* tokens, int n, int pos, KvCache& kv,
                                          bool logits, bool every_row) {
  check(n >= 1 && n <= n_batch_, "internal: eval batch size out of range");
  check(pos >= 0 && pos + n <= kv.n_ctx(), "context full: position " + std::to_string(pos + n) +
                                               " exceeds the context of " +
                                               std::to_string(kv.n_ctx()) + " tokens");
  single_.clear();
  single_.tables.push_back(kv.table());
  single_.state_slots.push_back(*kv.state_slot());
  for (int t = 0; t < n; ++t)
    single_.add(tokens[t], pos + t, 0, logits && (every_row || t == n - 1));
  return single_;
}

void Forward::eval_single(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits,
                          bool every_row) {
  eval_batch(single_batch(tokens, n, pos, kv, logits != nullptr, every_row), kv.store(), logits);
}

void Forward::eval_stage(const int32_t* tokens, int n, int pos, KvCache& kv, int begin, int end,
                         float* residual, float* logits, bool every_row) {
  check(!device_, "internal: pipeline stages run on the CPU only");
  check(0 <= begin && begin < end && end <= hp_.n_layer, "internal: stage layers out of range");
  check(residual || (begin == 0 && end == hp_.n_layer), "internal: a stage needs its residual");
  const bool last = end == hp_.n_layer;
  const ForwardBatch& b = single_batch(tokens, n, pos, kv, last && logits, every_row);
  validate(b, kv.store());
  run_layers(b, kv.store(), begin, end, residual, last ? nullptr : residual,
             last && logits ? b.logits_rows.size() : 0, logits, 0, nullptr);
}

void Forward::eval_batch_stage(const ForwardBatch& b, KvStore& kv, int begin, int end,
                               float* residual) {
  check(!device_ && !remote_, "internal: a pipeline stage runs on the CPU only");
  check(1 <= begin && begin < end && end <= hp_.n_layer, "internal: stage layers out of range");
  validate(b, kv);
  apply_state_copies(b, kv);
  run_layers(b, kv, begin, end, residual, residual, 0, nullptr, 0, nullptr);
}

void Forward::set_remote_stages(std::unique_ptr<RemoteStages> remote) {
  check(!device_, "internal: remote stages with device layers");
  check(remote && remote->local_end() >= 1 && remote->local_end() < hp_.n_layer,
        "internal: remote stages out of range");
  remote_ = std::move(remote);
}

void Forward::set_remote_experts(std::shared_ptr<RemoteExperts> experts) {
  check(!device_, "internal: remote experts with device layers");
  experts_ = std::move(experts);
}

void Forward::prepare(const KvStore& kv) {
  if (remote_) remote_->prepare(kv);
}

void Forward::apply_state_copies(const ForwardBatch& in, KvStore& kv) const {
  for (const ForwardBatch::StateCopy& c : in.state_copies) kv.copy_state(c.from, c.to);
}

void Forward::eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits) {
  eval_single(tokens, n, pos, kv, logits, false);
}

void Forward::eval_rows(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits) {
  eval_single(tokens, n, pos, kv, logits, true);
}

void Forward::validate(const ForwardBatch& in, const KvStore& kv) const {
  const size_t N = in.size();
  check(N >= 1 && N <= size_t(n_batch_), "internal: eval batch size out of range");
  for (size_t t = 0; t < N; ++t) {
    check(in.tokens[t] >= 0 && in.tokens[t] < hp_.n_vocab,
          "token id " + std::to_string(in.tokens[t]) + " is outside the vocabulary");
    check(in.pos[t] >= 0 && in.pos[t] < n_ctx_,
          "context full: position " + std::to_string(in.pos[t] + 1) + " exceeds the context of " +
              std::to_string(n_ctx_) + " tokens");
  }
  if (hp_.recurrent()) {
    check(in.state_slots.size() == in.tables.size(),
          "internal: a recurrent model's batch needs a state slot per sequence");
    for (const int32_t s : in.state_slots)
      check(s >= 0 && s < kv.n_state_slots(), "internal: state slot out of range");
    for (const ForwardBatch::StateSave& sv : in.state_saves)
      check(sv.slot >= 0 && sv.slot < kv.n_state_slots() && sv.seq >= 0 &&
                size_t(sv.seq) < in.tables.size(),
            "internal: a state snapshot out of range");
  }
  for (const ForwardBatch::StateCopy& c : in.state_copies)
    check(hp_.recurrent() && c.from >= 0 && c.from < kv.n_state_slots() && c.to >= 0 &&
              c.to < kv.n_state_slots(),
          "internal: a state copy out of range");
}

void Forward::eval_batch(const ForwardBatch& in, KvStore& kv, float* logits, float* hidden) {
  check(launched_.empty(), "internal: eval_batch with passes in flight");
  launch_batch(in, kv);
  finish_batch(logits, hidden);
}

int Forward::pipeline_depth() const {
  return remote_ ? remote_->depth() : 1;
}

void Forward::launch_batch(const ForwardBatch& in, KvStore& kv) {
  check(int(launched_.size()) < pipeline_depth(),
        "internal: more passes launched than the pipeline holds");
  validate(in, kv);
  Launched l{&in, &kv, {}};
  if (remote_) {
    // A pipeline: the first layers here, the rest on the remote stages, the output head at the
    // finish.
    check(!trace_ && !perturb_.on,
          "--trace and --perturb need every layer in one process: not across MPI ranks "
          "(docs/DISTRIBUTED.md)");
    if (!spare_rows_.empty()) {
      l.rows = std::move(spare_rows_.back());
      spare_rows_.pop_back();
    }
    l.rows.resize(in.size() * size_t(hp_.n_embd));
    apply_state_copies(in, kv);
    run_layers(in, kv, 0, remote_->local_end(), nullptr, l.rows.data(), 0, nullptr, 0, nullptr);
    remote_->send(in, kv, l.rows.data());
  }
  launched_.push_back(std::move(l));
}

void Forward::finish_batch(float* logits, float* hidden) {
  check(!launched_.empty(), "internal: no pass to finish");
  Launched l = std::move(launched_.front());
  launched_.pop_front();
  const ForwardBatch& in = *l.batch;
  const size_t n_logits = logits ? in.logits_rows.size() : 0;
  const size_t n_hidden = hidden ? in.hidden_rows.size() : 0;
  // The backends gather the output rows from batch.logits_rows: with hidden rows, a copy lists
  // the logits rows then the hidden rows (each row's final norm is row-local, so where it sits
  // in the output cannot change its bits).
  const ForwardBatch* pb = &in;
  if (n_hidden > 0) {
    merged_ = in;
    merged_.logits_rows.resize(n_logits);
    merged_.logits_rows.insert(merged_.logits_rows.end(), in.hidden_rows.begin(),
                               in.hidden_rows.end());
    merged_.hidden_rows.clear();
    pb = &merged_;
  }
  if (!remote_) {
    apply_state_copies(in, *l.kv);
    run_layers(*pb, *l.kv, 0, hp_.n_layer, nullptr, nullptr, n_logits, logits, n_hidden, hidden);
    return;
  }
  remote_->receive(l.rows.data());
  if (n_logits + n_hidden > 0)
    run_layers(*pb, *l.kv, hp_.n_layer, hp_.n_layer, l.rows.data(), nullptr, n_logits, logits,
               n_hidden, hidden);
  spare_rows_.push_back(std::move(l.rows));
}

void Forward::run_layers(const ForwardBatch& b, KvStore& kv, int begin, int end,
                         const float* residual_in, float* residual_out, size_t n_logits,
                         float* logits, size_t n_hidden, float* hidden) {
  const size_t N = b.size();
  const bool last = end == hp_.n_layer && !residual_out;
  const size_t n_out = last ? n_logits + n_hidden : 0;

  // Traces name positions from the first token's: only one sequence's batch can be traced.
  // result_* rows carry the position of the row whose logits they are, one row at a time.
  Pass pass;
  pass.n_tok = N;
  pass.n_out = n_out;
  pass.n_logits = n_logits;
  pass.experts = experts_.get();
  TraceFn trace_fn;
  if (b.tables.size() == 1 && (trace_ || perturb_.on)) {
    trace_fn = [&](std::string_view name, int layer, Act a, size_t rows) {
      if (name.substr(0, 7) == "result_") {
        if (rows == 1) trace(*pass.ops, name, layer, a, rows, b.pos[size_t(b.logits_rows[0])]);
      } else {
        trace(*pass.ops, name, layer, a, rows, b.pos[0]);
      }
    };
    pass.trace_fn = &trace_fn;
  }

  host_->begin(b, kv);
  if (device_) device_->begin(b, kv);
  pass.ops = first_device_layer_ == 0 ? device_.get() : host_.get();
  if (begin == 0)
    arch_->embed(pass);
  else  // a later pipeline stage: the stream the previous one left (host only)
    host_->upload(arch_->residual(), residual_in, N);
  for (int il = begin; il < end; ++il) {
    if (il == first_device_layer_ && il > 0) {
      // The residual stream moves to the device once per pass.
      const Act x = arch_->residual();
      float* h = host_->host_rows(x);
      if (!h) {
        staging_.resize(N * x.len);
        host_->download(x, N, staging_.data());
        h = staging_.data();
      }
      device_->upload(x, h, N);
      pass.ops = device_.get();
    }
    arch_->layer(pass, il);
  }
  if (residual_out) host_->download(arch_->residual(), N, residual_out);  // for the next stage
  if (n_out > 0) {
    arch_->output(pass);
    if (n_logits > 0) pass.ops->download(arch_->logits(), n_logits, logits);
    if (n_hidden > 0) {
      // The hidden rows are the normed rows after the logits rows.
      const Act nb = arch_->normed();
      const float* rows = pass.ops->host_rows(nb);
      if (!rows) {
        staging_.resize(n_out * nb.len);
        pass.ops->download(nb, n_out, staging_.data());
        rows = staging_.data();
      }
      std::memcpy(hidden, rows + n_logits * nb.len, n_hidden * nb.len * sizeof(float));
    }
  }
  if (device_) device_->finish();
  host_->finish();
}

}  // namespace tzero
