// An architecture: what each layer of a model family computes, in order, with the trace names
// of its intermediates, written once over the ops of model/backend_ops.h. Every backend runs
// it unchanged; model/forward.cpp decides which backend runs which layer.
//
// Adding one (docs/ARCHITECTURE.md, "Adding an architecture"): a file here with a class
// derived from Architecture, a case in make_architecture, its hyper-parameters in
// model/hparams.*, its tensors in model/weights.*.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "model/backend_ops.h"
#include "model/weights.h"

namespace tzero {

// Names an intermediate of the pass: (name, layer or -1, buffer, rows). llama.cpp's graph
// names ("attn_norm", "Qcur", ..., "result_output"), so traces line up with its dumps.
using TraceFn = std::function<void(std::string_view name, int layer, Act a, size_t rows)>;

class RemoteExperts;  // model/arch/moe_ffn.h

// One forward pass as an architecture sees it.
struct Pass {
  BackendOps* ops = nullptr;          // the backend of the current step (embed, a layer, output)
  size_t n_tok = 0;                   // tokens in the batch
  size_t n_out = 0;                   // output rows: batch.logits_rows (whose final norm is taken)
  size_t n_logits = 0;                // the first n_logits of them also get logits (the rest
                                      // are hidden rows: their final norm is the output)
  const TraceFn* trace_fn = nullptr;  // null: untraced
  RemoteExperts* experts = nullptr;   // null: every expert of a MoE layer here

  void trace(std::string_view name, int layer, Act a, size_t rows) const {
    if (trace_fn) (*trace_fn)(name, layer, a, rows);
  }
};

class Architecture {
 public:
  virtual ~Architecture() = default;

  // The activation buffers its steps use (each backend allocates them).
  const ActLayout& layout() const { return layout_; }
  // The residual stream: the only buffer that crosses from one layer to the next (and from one
  // backend to another between layers). (n_tok, n_embd)
  Act residual() const { return residual_; }
  Act logits() const { return logits_; }  // (n_logits, n_vocab)
  Act normed() const { return normed_; }  // (n_out, n_embd) result_norm of the output rows

  // tokens -> residual.
  virtual void embed(const Pass& p) const = 0;
  // residual -> residual through layer il.
  virtual void layer(const Pass& p, int il) const = 0;
  // residual rows of the batch's logits rows -> their final norm (normed()) -> logits of the
  // first n_logits.
  virtual void output(const Pass& p) const = 0;

 protected:
  // The output head every architecture here ends with: the residual rows of the batch's
  // logits rows (into rows), result_norm = rmsnorm of them (into normed, which must be
  // normed_), result_output = the output matrix times the first n_logits of them, soft-capped
  // when the model says so (into logits_). rows and normed: (n_out, n_embd).
  void norm_and_logits(const Pass& p, const Model& model, Act rows, Act normed) const;

  ActLayout layout_;
  Act residual_, logits_;
  Act normed_;  // the final norm's buffer (set by the constructor)
};

// The architecture of the model's family (hparams.arch). Throws tzero::Error for none.
std::unique_ptr<Architecture> make_architecture(const Model& model);

// One per family (model/arch/<family>.cpp).
std::unique_ptr<Architecture> make_llama_family(const Model& model);
std::unique_ptr<Architecture> make_gemma(const Model& model);       // gemma2, gemma3
std::unique_ptr<Architecture> make_nemotron_h(const Model& model);  // Mamba-2 hybrids

}  // namespace tzero
