// The forward pass: runs a model's architecture (model/arch/) over a batch of tokens on the
// backends it is given (model/backend_ops.h), and names every intermediate through one trace
// hook (llama.cpp's graph names: "attn_norm", "Qcur", ..., "result_output").
//
// Which backend runs what: the host backend runs the embedding and layers 0 .. n_layer - D - 1;
// a device backend, when given, runs the last D layers and the output head (and the embedding
// too when D = n_layer). The residual stream crosses once per pass; only the logits rows asked
// for come back. Forward never creates a backend: backend/backends.h makes the usual ones.
//
// Contract: the logits of position p are the same bits however positions 0..p were fed (one
// batch, several chunks, one token at a time), whatever the thread count and whatever else
// shares the batch, because every backend computes every output element in its canonical
// order (docs/DETERMINISM.md).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch/architecture.h"
#include "model/backend_ops.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/weights.h"

namespace tzero {

// Layers run elsewhere: a pipeline's later ranks (distributed/pipeline.h, docs/DISTRIBUTED.md).
// A Forward given them runs the embedding, its layers [0, local_end()) and the output head; the
// stream crosses to the remote stages and back once per pass, as float32 copied exactly.
class RemoteStages {
 public:
  virtual ~RemoteStages() = default;
  virtual int local_end() const = 0;  // the first layer not run here (>= 1)
  // How many passes may be out at once (sent and not yet received).
  virtual int depth() const = 0;
  // Sends a pass: residual (b.size(), n_embd), the stream leaving layer local_end() - 1. kv: the
  // store the batch's tables index (its geometry is mirrored there). Returns without waiting.
  virtual void send(const ForwardBatch& b, const KvStore& kv, const float* residual) = 0;
  // The oldest pass sent and not received: residual (its b.size(), n_embd) gets the stream
  // leaving the model's last layer. Throws tzero::Error when a stage failed it or does not
  // answer in time.
  virtual void receive(float* residual) = 0;
  // Makes kv's mirror there now rather than at its first pass (a large pool takes a while).
  virtual void prepare(const KvStore& kv) = 0;
};

// Called with the tensor name, the layer (-1 outside layers), the data (n_tokens rows of
// row_len floats, row-major, in host memory) and the positions' first index.
using TraceHook = std::function<void(std::string_view name, int layer, const float* data,
                                     size_t n_tokens, size_t row_len, int pos0)>;

class Forward {
 public:
  // n_ctx: most positions a sequence has; n_batch: most tokens one pass takes (the backends
  // were made for both). device_layers: how many last layers the device runs (0 without one).
  Forward(const Model& model, std::unique_ptr<Architecture> arch, int n_ctx, int n_batch,
          std::unique_ptr<BackendOps> host, std::unique_ptr<BackendOps> device = nullptr,
          int device_layers = 0);
  ~Forward();

  // Evaluates tokens[0..n) of one sequence at positions pos..pos+n-1 (n <= n_batch,
  // pos + n <= kv.n_ctx()), stores their keys and values in kv, and writes the logits of the
  // last one to logits (n_vocab floats) when logits is not null.
  void eval(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits);
  // The same, with the logits of every one of the n tokens: logits (n, n_vocab), row t the
  // logits after tokens[0..t] (speculative decoding's verification, runtime/speculative.h).
  void eval_rows(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits);

  // Evaluates a batch of up to n_batch tokens of any sequences, stores their keys and values
  // in kv, and writes the logits rows the batch asks for to logits ((logits_rows, n_vocab))
  // and, when hidden is not null, the final hidden states (result_norm: after the output norm,
  // before the head) of its hidden rows to hidden ((hidden_rows, n_embd)). Each row's bits are
  // those the sequence would get alone. Traces only single-sequence batches.
  void eval_batch(const ForwardBatch& batch, KvStore& kv, float* logits, float* hidden = nullptr);

  // eval_batch in two halves, so that a pipeline keeps several passes in flight (micro-batches,
  // docs/DISTRIBUTED.md): launch_batch checks the batch, makes its state copies, runs this
  // process's layers and sends the stream to the remote stages; finish_batch waits for the
  // oldest launched pass and writes its output rows as eval_batch does. At most
  // pipeline_depth() passes are launched and not finished; `batch` and `kv` must stay alive and
  // unchanged until the pass's finish, and a later pass must not touch the KV blocks or state
  // slots of one in flight (the engine's scheduler keeps their sequences out). Every op runs in
  // launch order on every rank, so the bits are eval_batch's. Without remote stages the depth is
  // 1 and finish_batch computes the whole pass.
  int pipeline_depth() const;
  void launch_batch(const ForwardBatch& batch, KvStore& kv);
  void finish_batch(float* logits, float* hidden = nullptr);
  int n_launched() const { return int(launched_.size()); }

  // A pipeline stage (docs/DISTRIBUTED.md): one sequence's pass over layers [begin, end) only.
  // residual (n, n_embd) float32: the stream entering layer `begin` (unused at begin 0, where the
  // tokens are embedded) and, when end < n_layer, the stream leaving layer end - 1 on return;
  // at end == n_layer, logits as eval (the last row's) or eval_rows (every_row) write them. A
  // chain of stages over a partition of the layers, each with its own KvCache and the residual
  // handed on as float32, gives eval's bits. CPU only (no device layers).
  void eval_stage(const int32_t* tokens, int n, int pos, KvCache& kv, int begin, int end,
                  float* residual, float* logits, bool every_row = false);
  // A pipeline rank's part of eval_batch: the batch's state copies, then layers [begin, end)
  // (begin >= 1) over residual ((b.size(), n_embd), in and out). No output rows, no trace.
  void eval_batch_stage(const ForwardBatch& b, KvStore& kv, int begin, int end, float* residual);

  // From now on, layers [remote->local_end(), n_layer) run on `remote` (CPU only, no trace).
  void set_remote_stages(std::unique_ptr<RemoteStages> remote);
  // From now on the experts of its MoE layers that live on other ranks run there (expert
  // parallelism, model/arch/moe_ffn.h; CPU only, no trace).
  void set_remote_experts(std::shared_ptr<RemoteExperts> experts);
  // The store this Forward will run passes on: with remote stages their mirror of it is made now
  // (else at the first pass). Nothing without.
  void prepare(const KvStore& kv);

  void set_trace(TraceHook hook) { trace_ = std::move(hook); }
  // Test hook for the proof tools: flips the lowest bit of the first element of tensor `op` of
  // `layer` at position `pos` when the pass computes it, so its effect can be traced.
  void set_perturbation(int layer, const std::string& op, int pos) {
    perturb_ = {true, layer, op, pos};
  }
  int n_batch() const { return n_batch_; }
  const BackendOps& host() const { return *host_; }
  const BackendOps* device() const { return device_.get(); }  // null: CPU only

 private:
  // eval (the last token's logits) and eval_rows (every token's): one sequence's batch.
  void eval_single(const int32_t* tokens, int n, int pos, KvCache& kv, float* logits,
                   bool every_row);
  // Throws for a token outside the vocabulary, a position past the context, a bad state slot.
  void validate(const ForwardBatch& in, const KvStore& kv) const;
  // One sequence's batch of n tokens at pos (its logits rows: the last, or every one).
  const ForwardBatch& single_batch(const int32_t* tokens, int n, int pos, KvCache& kv, bool logits,
                                   bool every_row);
  // eval_batch's pass over layers [begin, end): embedded at 0, else from residual_io; the
  // residual stream left in residual_io when end < n_layer, else the output rows.
  // residual_in: the stream entering layer begin (begin > 0); residual_out, when not null: the
  // stream leaving layer end - 1. begin == end == n_layer: the output head only.
  void run_layers(const ForwardBatch& in, KvStore& kv, int begin, int end, const float* residual_in,
                  float* residual_out, size_t n_logits, float* logits, size_t n_hidden,
                  float* hidden);
  void apply_state_copies(const ForwardBatch& in, KvStore& kv) const;
  // The trace of buffer a of `ops` (pos0: the first row's position).
  void trace(BackendOps& ops, std::string_view name, int layer, Act a, size_t rows, int pos0);

  const HParams& hp_;
  std::unique_ptr<Architecture> arch_;
  int n_ctx_, n_batch_;
  std::unique_ptr<BackendOps> host_, device_;
  int first_device_layer_;  // n_layer without a device
  TraceHook trace_;
  struct {
    bool on = false;
    int layer = 0;
    std::string op;
    int pos = 0;
  } perturb_;
  std::unique_ptr<RemoteStages> remote_;    // null: every layer here
  std::shared_ptr<RemoteExperts> experts_;  // null: every expert here
  // A pass launched and not finished: its batch, store, and the stream it sent (b.size(),
  // n_embd), which comes back into the same rows.
  struct Launched {
    const ForwardBatch* batch;
    KvStore* kv;
    std::vector<float> rows;
  };
  std::deque<Launched> launched_;               // in launch order
  std::vector<std::vector<float>> spare_rows_;  // rows of finished passes, for the next
  std::vector<float> staging_;                  // (rows, len) host copy of a device buffer
  ForwardBatch single_;                         // eval()'s batch
  ForwardBatch merged_;  // a batch with hidden rows: its logits rows, then its hidden rows
};

}  // namespace tzero
