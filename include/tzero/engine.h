// tzero's batched engine: many requests in flight, one forward pass per step over all of them
// (continuous batching over a paged KV cache with prefix caching), and every request still
// gets exactly the bits it would get alone (docs/DETERMINISM.md, "Batch invariance").
//
//   tzero::EngineOptions o;  o.model_path = "model.gguf";
//   tzero::Engine engine(o);
//   tzero::RequestParams r;  r.prompt = "Once upon a time";  r.max_tokens = 32;
//   engine.submit(r, [](const tzero::TokenEvent& e) { std::cout << e.text; });
//   engine.run_until_idle();             // or engine.start() for a background stepping thread
//
// Threads: submit, cancel and stats may be called from any thread. Callbacks run on the thread
// that steps the engine (the caller of step()/run_until_idle(), or the background thread), one
// request's events in order; a callback must not block for long and must not call step()
// (an exception it throws is swallowed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tzero/request.h"
#include "tzero/sampling.h"
#include "tzero/types.h"

namespace tzero {

// With RequestParams::prompt_logprobs, first one event per prompt token after the first
// (prompt = true: token is that prompt token, logprob and top from the row before it, rank its
// rank there, text empty). Then one event per generated token, then one final event
// (finished = true, token = -1). The token
// that ends a request (EOS, EOT, a stop token, the one completing a stop string) has its event
// too. The decode step (src/runtime/decode_step.h) is the same one `tzero run` and `tzero chat`
// use, so they agree on the tokens, the text and where a request stops.
struct TokenEvent {
  uint64_t request = 0;
  int32_t token = -1;
  std::string text;   // text released by this event; may be empty (incomplete UTF-8, or text
                      // held back while it could still become a stop string)
  float logprob = 0;  // when SamplingParams::logprobs
  std::vector<TokenLogprob> top;  // SamplingParams::top_logprobs alternatives
  bool prompt = false;            // a prompt token's score (RequestParams::prompt_logprobs)
  int rank = 0;                   // prompt events: 1 + the tokens with a larger logit
  bool finished = false;
  // Final event: stop (EOS, EOT, a stop token or string), length (max_tokens or the context)
  // or cancelled; stop_reason says which exactly.
  FinishReason finish_reason = FinishReason::none;
  StopReason stop_reason = StopReason::none;
  // Final event only: the request's summary.
  int n_prompt = 0;              // prompt tokens
  int n_generated = 0;           // generated tokens
  int n_cached = 0;              // prompt tokens found in the prefix cache when first scheduled
  int n_preempted = 0;           // times the request was preempted and recomputed
  int n_drafted = 0;             // speculative decoding: draft tokens verified (0 without)
  int n_accepted = 0;            // of which the target sampled the same (rejected: the rest)
  std::string logits_digest;     // XXH3-128 over every sampled logits row, as `tzero run` prints
  std::vector<float> embedding;  // an embedding request's vector (RequestParams::embedding)
};
using TokenCallback = std::function<void(const TokenEvent&)>;

class Session;  // a model opened with its compute options (src/runtime/session.h)

struct EngineOptions {
  std::string model_path;
  // true: the default load (read into 2 MiB pages when it fits in half the available memory, else
  // mapped; TZ_MMAP=1 maps); false: always read into memory (--no-mmap; base/mapped_file.h)
  bool use_mmap = true;
  int n_threads = 1;
  std::string kernels = "auto";  // scalar, avx2, avx512, amx, amx-emu, neon*, auto: same bits
  std::vector<std::string> op_overrides;  // "matmul.f32=NAME": registered custom kernels
  Mode mode = Mode::deterministic;        // or fast (no reproducibility contract), or portable
                                          // (with gpu_layers: the CPU's bits on a GPU)
  std::string gpu_layers = "0";           // "all" or N: the last N layers on the CUDA device
  int n_ctx = 0;                          // most positions per sequence; 0: min(trained, 4096)
  int block_size = 16;                    // KV cache block, in positions
  // KV pool capacity in positions, or else in bytes; both 0: max_seqs x n_ctx positions, at
  // most 1 GiB and at least one context.
  int kv_tokens = 0;
  size_t kv_bytes = 0;
  std::string kv_type = "f32";  // or "f16" (changes the bits; named in the fingerprint)
  int max_batch_tokens = 256;   // token budget of one forward pass
  int max_seqs = 16;            // sequences running at once
  int prefill_chunk = 0;        // most prompt tokens of one sequence per step; 0: the budget
  int max_queue = 256;          // waiting requests beyond this are refused (QueueFull)
  bool prefix_cache = true;
  // Speculative decoding (docs/DETERMINISM.md, "L3 speculation": the same bits): "none",
  // "ngram-simple" (prompt lookup: the tokens that followed the last earlier occurrence of a
  // request's last 4..1 tokens) or "draft" (draft_model: a GGUF file with the same vocabulary,
  // run greedily on the CPU with the engine's threads, one KV cache of the engine's context per
  // running request), up to draft_max drafts per step, none under draft_min.
  std::string spec_type = "none";
  std::string draft_model;
  int draft_max = 16, draft_min = 0;
  // What Pooling::model means for embedding requests: model (the file's {arch}.pooling_type
  // if it says mean, cls or last; none or absent: mean; rank: refused) or one of those.
  Pooling pooling = Pooling::model;
  // Called once, on the stepping thread (start()), when a step fails for a reason no request
  // caused: a pipeline rank that died or hangs (docs/DISTRIBUTED.md). Every request in flight
  // has then ended "cancelled", and submit() throws EngineFailed. Null: the engine only stops.
  std::function<void(const std::string& why)> on_failure;
};

struct EngineStats {
  int waiting = 0, running = 0;
  int kv_blocks_total = 0, kv_blocks_used = 0;  // used: held by a running sequence
  int kv_blocks_cached = 0;                     // free but holding a reusable prefix
  int block_size = 0;
  uint64_t steps = 0, prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  uint64_t preemptions = 0, requests_finished = 0, requests_cancelled = 0;
  bool prefix_cache = true;  // ModelInfo::prefix_cache
  size_t state_bytes = 0;    // recurrent state of every slot (0 without recurrent layers)
  int state_snapshots = 0;   // snapshots of recurrent states held for the prefix cache
  // Speculative decoding: draft tokens fed for verification, and those equal to the token
  // sampled at their place.
  uint64_t drafted_tokens = 0, accepted_tokens = 0;
};

struct ModelInfo {
  std::string name;  // general.name, else the file name
  std::string path;
  int n_ctx = 0;  // the engine's context per sequence
  int n_vocab = 0;
  int n_embd = 0;                                  // an embedding's length before `embedding_dims`
  int32_t bos = -1, eos = -1, eot = -1, pad = -1;  // -1: the vocabulary has none
  bool add_bos = true;  // the vocabulary asks for a BOS before a prompt (add_bos_token)
  // The pooling of Pooling::model requests: mean, cls or last, or none when the model's
  // declared pooling is one tzero cannot give (rank) and no EngineOptions::pooling overrides
  // it; pooling_note says where it came from ("qwen3.pooling_type = 3", "default", "option")
  // or why embeddings are refused.
  Pooling pooling = Pooling::mean;
  std::string pooling_note;
  std::string fingerprint;    // the numerics fingerprint (tzero fingerprint)
  std::string chat_template;  // tokenizer.chat_template ("" when the file has none)
  // Whether prompt prefixes are reused (EngineOptions::prefix_cache; for models with recurrent
  // layers with snapshots of the state at prompt block boundaries, prefix_cache_note says how
  // many), and the recurrent state one sequence holds beside its KV blocks (bytes, 0 without
  // recurrent layers; EngineOptions::max_seqs of them, plus the snapshots).
  bool prefix_cache = true;
  std::string prefix_cache_note;
  size_t state_bytes_per_seq = 0;
  int state_snapshots = 0;  // slots for the recurrent states at prompt block boundaries
};

// The waiting queue is full: try again later.
struct QueueFull : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The engine's stepping failed (EngineOptions::on_failure): it takes no more requests.
struct EngineFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ChatTurn {
  std::string role, content;
};

class Engine {
 public:
  // Loads the model; throws std::runtime_error (a tzero::Error) for an unusable file or option.
  explicit Engine(const EngineOptions& options);
  // An engine on an open session (runtime/session.h), sharing its model, thread pool and
  // kernels: the session's compute options replace those of `options` (model_path, use_mmap,
  // n_threads, kernels, op_overrides, mode, gpu_layers, n_ctx, kv_type). The session's pool
  // then runs the engine's passes: nothing else may run a pass on it while the engine steps.
  Engine(std::shared_ptr<Session> session, const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues a request; returns its id (> 0). Throws RequestError, QueueFull, or
  // EngineFailed after a failed step.
  uint64_t submit(const RequestParams& request, TokenCallback on_event);
  // Cancels a waiting or running request (its final event says "cancelled") and frees its KV
  // blocks at the next step. Unknown or finished ids are ignored.
  void cancel(uint64_t request);

  // One scheduling step and forward pass. Returns false when there was nothing to do.
  bool step();
  void run_until_idle();
  // A background thread that steps while there is work; stop() cancels what is in flight,
  // delivers the final events and joins.
  void start();
  void stop();

  EngineStats stats() const;
  const ModelInfo& info() const;
  const EngineOptions& options() const;  // as given to the constructor

  std::vector<int32_t> tokenize(const std::string& text, bool add_bos, bool parse_special) const;
  // A prompt's tokens as submit() makes them from RequestParams::prompt: BOS by the one rule
  // (runtime/prompt.h: the vocabulary's add_bos_token, none when parse_special and the text
  // starts with the BOS text), at least one token when the vocabulary has a BOS.
  std::vector<int32_t> tokenize_prompt(const std::string& text, bool parse_special) const;
  // The tokens of a rendered chat prompt (apply_chat_template): special texts parsed, BOS by
  // the same rule, never an EOS.
  std::vector<int32_t> tokenize_chat(const std::string& rendered) const;
  // special: control tokens are written by name (as /detokenize does) instead of as nothing.
  std::string detokenize(const std::vector<int32_t>& tokens, bool special = false) const;
  // One token's own text piece (as TokenLogprob::text spells it: a leading space kept, control
  // tokens by name, a byte-fallback token as its raw byte, so possibly not valid UTF-8).
  std::string token_text(int32_t token) const;
  // The chat template applied to the conversation, ending with the assistant's turn opened:
  // template_name (a named format: llama2, llama3, chatml, ...; or a template file), else the
  // model's tokenizer.chat_template, else chatml (the one rule of src/chat/template_choice.h).
  // Throws RequestError for an unknown name or when the template refuses the conversation.
  std::string apply_chat_template(const std::vector<ChatTurn>& messages,
                                  const std::string& template_name = "") const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tzero
