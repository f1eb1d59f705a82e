// One way in: a model opened with its compute options. A Session holds what every command and
// tool used to build for itself (the model and tokenizer, the thread pool, the kernel set with
// its op overrides, the GPU layers checked against the mode, the context), and makes forward
// passes on them. `tzero run` (runtime/generate.h), `tzero chat`, bench, the batched engine
// (tzero::Engine) and the Python package all open one; the request side is
// runtime/request.h's start_request().
//
//   ComputeOptions c;  c.n_threads = 4;  c.kernels = "auto";
//   auto s = Session::open("model.gguf", c);          // tzero::Error for a bad file or option
//   auto fwd = s->make_forward();                     // n_ctx x n_batch, on s->pool()
//
// A session's pool runs one forward pass at a time: callers that share a session serialise
// their passes (the engine's stepping thread, the Python package's lock).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/stream_read.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/fingerprint.h"
#include "tokenizer/vocab.h"
#include "tzero/types.h"

namespace tzero {

namespace dist {
class Pipeline;    // distributed/pipeline.h
struct StagePlan;  // distributed/stage_plan.h
}  // namespace dist

// How to compute, parsed once at the edge (cli/compute_flags.h, EngineOptions, the Python
// package). Only mode, kv_type and op_overrides can change the bits (the fingerprint says so);
// the rest is speed and sizes.
struct ComputeOptions {
  int n_threads = 1;
  std::string kernels = "auto";           // a kernel set (kernels/kernel_set.h) or auto
  std::vector<std::string> op_overrides;  // "matmul.f32=NAME": registered custom kernels
  Mode mode = Mode::deterministic;
  int gpu_layers = 0;  // the last N layers on the CUDA device; kAllGpuLayers: all of them
  int n_ctx = 0;       // positions per sequence; 0: min(trained context, 4096)
  int n_batch = 64;    // most tokens per forward pass (prefill chunk)
  KvType kv_type = KvType::F32;
  bool use_mmap = true;  // true: MappedFile::Load::Auto (read if it fits, else map); false: read
  // Under mpirun with the MPI build (docs/DISTRIBUTED.md): how the layers are split over the
  // ranks (bytes, layers, or the first layer of ranks 1..N-1) and how long a pass may take
  // there. Neither changes the bits.
  std::string pipeline_split = "bytes";
  double rank_timeout_s = 60;
  // Under mpirun: the most passes in flight over the ranks (micro-batches of the engine's
  // sequences, taking turns); 0: one per rank. 1: one pass at a time. Never changes the bits.
  int micro_batches = 0;
  // Under mpirun: a MoE model's routed experts split over ranks 1..N-1 (expert parallelism,
  // distributed/experts.h), each slot computed where its expert lives. Never changes the bits.
  bool expert_parallel = false;
  // Under mpirun: every layer in this process all the same (a small draft model: its passes
  // then never wait for the ranks).
  bool whole_here = false;
};
constexpr int kAllGpuLayers = -1;

// The edge spellings: "all" or N for the GPU layers, "f32"/"f16" for the KV type. tzero::Error
// naming the flag for anything else.
int parse_gpu_layers_arg(const std::string& text);
// The layers N GPU layers put on the device in a model of n_layer: kAllGpuLayers, and any N
// beyond n_layer, are all of them (llama.cpp's convention: -ngl 99).
int resolve_gpu_layers(int gpu_layers, int n_layer);
KvType parse_kv_type_arg(const std::string& text);
const char* to_string(KvType t);

// The fingerprint a session with these options would have, without one: no thread pool and no
// check of the GPU layers against the machine or the mode (`tzero fingerprint --mode portable`
// describes a GPU run anywhere). Throws tzero::Error for a bad file, kernel set or op name.
Fingerprint fingerprint_of(const std::string& path, const ComputeOptions& options);

class Session {
 public:
  // Loads the model at `path` and checks the options against it.
  static std::shared_ptr<Session> open(const std::string& path, const ComputeOptions& options);
  // A session over a model already loaded, which must outlive it (the audit's variants, each
  // with its own threads and kernels).
  static std::shared_ptr<Session> over(const Model& model, const Vocab& vocab,
                                       const ComputeOptions& options);

  const Model& model() const { return *model_; }
  const Vocab& vocab() const { return *vocab_; }
  const HParams& hparams() const { return model_->hparams(); }
  const ComputeOptions& options() const { return options_; }
  const std::string& path() const { return path_; }
  int n_ctx() const { return n_ctx_; }
  int gpu_layers() const { return gpu_layers_; }  // resolved: 0..n_layer
  const KernelSet& kernels() const { return kernels_; }
  // The kernel set's name and the op overrides ("avx512 matmul.f32=mine").
  std::string kernels_label() const;
  ThreadPool& pool() { return *pool_; }

  // A forward pass over n_ctx positions, at most n_batch tokens per pass (0: the options'
  // n_batch, at most n_ctx: one sequence's prefill chunk; the engine asks for its budget).
  std::unique_ptr<Forward> make_forward(int n_batch = 0);
  // The layers this process runs, whose KV caches it keeps: all of them, except on rank 0 of a
  // pipeline over MPI ranks (its first range; the others run the rest).
  LayerRange local_layers() const;
  // How the layers are split over the MPI ranks; null in one process.
  const dist::StagePlan* stage_plan() const;
  // The numerics fingerprint of this model under these options (runtime/fingerprint.h).
  Fingerprint fingerprint() const;
  // "model NAME (arch, N layers, V tokens), kernels K, threads T, mode M, context C".
  std::string describe() const;
  // The machine's streaming-read rate on this session's threads (kernels/stream_read.h): the
  // roofline `tzero bench` reports decode against. Not while a forward pass runs on the pool.
  StreamRead measure_stream_read(size_t bytes = kStreamReadDefaultBytes, int reads = 5) {
    return tzero::measure_stream_read(*pool_, bytes, reads);
  }

 private:
  Session(const Model* model, const Vocab* vocab, const ComputeOptions& options);

  std::unique_ptr<Model> owned_model_;
  std::unique_ptr<Vocab> owned_vocab_;
  const Model* model_ = nullptr;
  const Vocab* vocab_ = nullptr;
  std::string path_;
  ComputeOptions options_;
  int n_ctx_ = 0, gpu_layers_ = 0;
  KernelSet kernels_;
  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<dist::Pipeline> pipeline_;  // null: every layer in this process
};

}  // namespace tzero
