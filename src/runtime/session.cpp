// A model opened with its compute options (runtime/session.h).
#include "runtime/session.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backend/backend.h"
#include "backend/backends.h"
#include "base/error.h"
#include "distributed/pipeline.h"
#include "distributed/transport.h"
#include "ops/registry.h"

namespace tzero {

int parse_gpu_layers_arg(const std::string& text) {
  if (text == "all") return kAllGpuLayers;
  bool digits = !text.empty() && text.size() <= 9;
  for (const char c : text) digits = digits && c >= '0' && c <= '9';
  if (digits) return std::stoi(text);
  throw Error("--gpu-layers wants 'all' or a number of layers >= 0, not '" + text + "'");
}

int resolve_gpu_layers(int gpu_layers, int n_layer) {
  return gpu_layers == kAllGpuLayers ? n_layer : std::min(gpu_layers, n_layer);
}

KvType parse_kv_type_arg(const std::string& text) {
  return parse_kv_type(text);
}

const char* to_string(KvType t) {
  return t == KvType::F16 ? "f16" : "f32";
}

Session::Session(const Model* model, const Vocab* vocab, const ComputeOptions& options)
    : model_(model), vocab_(vocab), options_(options), kernels_(scalar_kernels()) {
  const HParams& hp = model_->hparams();
  check(options.n_threads >= 1 && options.n_threads <= 1024,
        "the thread count must be in [1, 1024]");
  check(options.n_batch >= 1, "the batch size must be >= 1");
  check(options.n_ctx >= 0 && options.n_ctx <= (1 << 20), "context size is out of range");
  check(vocab_->n_tokens() <= hp.n_vocab,
        "the tokenizer has " + std::to_string(vocab_->n_tokens()) +
            " tokens but the model's vocabulary is " + std::to_string(hp.n_vocab));
  n_ctx_ = hp.context_or_default(options.n_ctx);
  check(n_ctx_ >= 1 && n_ctx_ <= (1 << 20), "context size is out of range");
  check(options.gpu_layers >= 0 || options.gpu_layers == kAllGpuLayers,
        "--gpu-layers wants 'all' or a number of layers >= 0");
  gpu_layers_ = resolve_gpu_layers(options.gpu_layers, hp.n_layer);
  check(gpu_layers_ == 0 || model_->repacked_tensors() == 0,
        "--gpu-layers: this model was laid out for the CPU's kernels at load (Blocks8 or "
        "Rows16, kernels/weight_layout.h); open it with the GPU layers from the start");
  check_gpu_mode(gpu_layers_, options.mode);
  kernels_ = with_overrides(select_kernels(options.kernels), options.op_overrides);
  pool_ = std::make_unique<ThreadPool>(options.n_threads);
}

std::shared_ptr<Session> Session::open(const std::string& path, const ComputeOptions& options) {
  // Over MPI ranks each maps the file and reads only its own layers (dist::load_stage: a model
  // larger than one host); layers on a GPU stream from its memory: the host copy would only be
  // uploaded, so map.
  const bool ranks = dist::world().several() && !options.whole_here;
  check(!ranks || options.gpu_layers == 0,
        "--gpu-layers: not over several MPI ranks yet (docs/DISTRIBUTED.md)");
  check(options.rank_timeout_s >= 1 && options.rank_timeout_s <= 86400,
        "--rank-timeout must be in [1, 86400] seconds");
  check(options.micro_batches >= 0 && options.micro_batches <= 64,
        "--micro-batches must be in [0, 64] (0: one per rank)");
  check(!options.expert_parallel || ranks || options.whole_here,
        "--expert-parallel splits a MoE model's experts over MPI ranks: it needs the MPI build "
        "started by mpirun with 2 or more ranks (docs/DISTRIBUTED.md)");
  const MappedFile::Load load = !options.use_mmap         ? MappedFile::Load::Read
                                : options.gpu_layers != 0 ? MappedFile::Load::Map
                                                          : MappedFile::Load::Auto;
  // The matrices are laid out for the kernels that will compute with them (model/weights.h);
  // layers on a GPU are uploaded as the file has them. TZ_WEIGHT_LAYOUT=file keeps the file's
  // layout (to measure the difference; the bits are the same).
  const KernelSet kernels = with_overrides(select_kernels(options.kernels), options.op_overrides);
  const char* layout = std::getenv("TZ_WEIGHT_LAYOUT");
  const bool repack = options.gpu_layers == 0 && !(layout && std::string(layout) == "file");
  std::unique_ptr<Model> model;
  dist::StagePlan plan;
  if (ranks) {  // rank 0's part: the embedding, the head and the first layers
    auto file = std::make_unique<GgufFile>(path, MappedFile::Load::Map);
    const HParams hp = read_hparams(*file);
    const int n_ranks = dist::world().size;
    if (options.expert_parallel) {
      check(hp.n_expert > 0, "--expert-parallel: " + path + " has no experts (not a MoE model)");
      check(hp.n_expert >= n_ranks - 1,
            "--expert-parallel: " + std::to_string(n_ranks - 1) + " ranks to hold experts but " +
                path + " has " + std::to_string(hp.n_expert) + " (start fewer with mpirun -np)");
    }
    // (With expert parallelism the layers split by their bytes without the routed experts.)
    plan = dist::plan_stages(dist::layer_bytes(*file, hp.n_layer, options.expert_parallel),
                             dist::head_bytes(*file), n_ranks, options.pipeline_split);
    plan.n_expert = options.expert_parallel ? hp.n_expert : 0;
    model = dist::load_stage(std::move(file), plan, 0, repack ? &kernels : nullptr).model;
    if (const std::string note = unknown_keys_note(*model); !note.empty())
      std::fprintf(stderr, "tzero: note: %s\n", note.c_str());
  } else {
    model = Model::load(path, load, repack ? &kernels : nullptr);
  }
  auto vocab = std::make_unique<Vocab>(Vocab::from_gguf(model->gguf()));
  std::shared_ptr<Session> s(new Session(model.get(), vocab.get(), options));
  s->owned_model_ = std::move(model);
  s->owned_vocab_ = std::move(vocab);
  s->path_ = path;
  if (ranks) {
    dist::PipelineOptions po;
    po.rank_timeout_s = options.rank_timeout_s;
    po.micro_batches = options.micro_batches;
    po.n_threads = options.n_threads;
    po.kernels = options.kernels;
    po.op_overrides = options.op_overrides;
    po.fast = options.mode == Mode::fast;
    po.repack = repack;
    s->pipeline_ = dist::Pipeline::open(*s->model_, path, plan, po);
  }
  return s;
}

std::shared_ptr<Session> Session::over(const Model& model, const Vocab& vocab,
                                       const ComputeOptions& options) {
  std::shared_ptr<Session> s(new Session(&model, &vocab, options));
  s->path_ = model.gguf().path();
  return s;
}

Fingerprint fingerprint_of(const std::string& path, const ComputeOptions& options) {
  // Only the file's keys and tensor types are read: mapped unless --no-mmap, never copied.
  const std::unique_ptr<Model> model =
      Model::load(path, options.use_mmap ? MappedFile::Load::Map : MappedFile::Load::Read);
  const KernelSet kernels = with_overrides(select_kernels(options.kernels), options.op_overrides);
  return compute_fingerprint(*model, options.mode, kernels.name, options.op_overrides,
                             to_string(options.kv_type),
                             model->hparams().context_or_default(options.n_ctx));
}

std::string Session::kernels_label() const {
  std::string out = kernels_.name;
  for (const std::string& o : options_.op_overrides) out += " " + o;
  return out;
}

std::unique_ptr<Forward> Session::make_forward(int n_batch) {
  // A sequence's chunk never exceeds its context; a batch of sequences (the engine) may.
  const int b = n_batch > 0 ? n_batch : std::min(options_.n_batch, n_ctx_);
  std::unique_ptr<Forward> fwd = tzero::make_forward(
      *model_, *pool_, {n_ctx_, b, kernels_, options_.mode == Mode::fast, gpu_layers_});
  if (pipeline_) {
    fwd->set_remote_stages(pipeline_->stages(n_ctx_, b));
    if (auto experts = pipeline_->remote_experts()) fwd->set_remote_experts(std::move(experts));
  }
  return fwd;
}

LayerRange Session::local_layers() const {
  return {0, pipeline_ ? pipeline_->local_end() : model_->hparams().n_layer};
}

const dist::StagePlan* Session::stage_plan() const {
  return pipeline_ ? &pipeline_->plan() : nullptr;
}

Fingerprint Session::fingerprint() const {
  return compute_fingerprint(*model_, options_.mode, kernels_.name, options_.op_overrides,
                             to_string(options_.kv_type), n_ctx_);
}

std::string Session::describe() const {
  const HParams& hp = model_->hparams();
  return "model " + path_ + " (" + hp.arch_name + ", " + std::to_string(hp.n_layer) + " layers, " +
         std::to_string(vocab_->n_tokens()) + " tokens), kernels " + kernels_label() +
         ", threads " + std::to_string(options_.n_threads) + ", mode " + to_string(options_.mode) +
         ", context " + std::to_string(n_ctx_) +
         (gpu_layers_ > 0 ? ", " + std::to_string(gpu_layers_) + " layers on the GPU" : "") +
         (pipeline_ ? ", " + std::to_string(pipeline_->plan().n_ranks()) + " MPI ranks (" +
                          pipeline_->plan().describe() + ")"
                    : "");
}

}  // namespace tzero
