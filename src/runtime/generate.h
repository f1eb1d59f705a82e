// One request, start to end, on its own KV cache: tokenize the prompt (runtime/prompt.h),
// prefill it in chunks, then decode token by token through a DecodeStep (runtime/decode_step.h:
// sampling, digest, stop rules, streamed text). This is what `tzero run` and the audit drive;
// the batched engine (src/batch/, behind `tzero serve`) runs the same DecodeStep per sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/forward.h"
#include "model/weights.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tokenizer/vocab.h"
#include "tzero/sampling.h"
#include "tzero/types.h"

namespace tzero {

struct GenerateOptions {
  std::string prompt;
  // Used as is when not empty (prompt, add_bos, parse_special and chat_prompt are then not
  // used): the tokens a server request resolved to (tzero verify reruns a locked request).
  std::vector<int32_t> prompt_tokens;
  int n_predict = 128;  // tokens to generate (stops early at EOS, EOT or a full context)
  // Threads, kernels, mode, GPU layers, context, prefill chunk (n_batch), KV type, op
  // overrides: the session's (runtime/session.h); generate(model, vocab, ...) opens one.
  ComputeOptions compute;
  // The sampling chain (tzero/sampling.h), as the engine and the server run it: temperature 0
  // (the default) is greedy; logprobs are not used here.
  SamplingParams sampling;
  bool add_bos = true;  // allow the BOS the vocabulary asks for (runtime/prompt.h); false: --no-bos
  bool parse_special = false;
  // The prompt is a rendered chat prompt (tzero run --messages): tokenized as the server's chat
  // prompts are (tokenize_chat_prompt: special texts parsed, BOS by the rule, never an EOS);
  // add_bos and parse_special are then not used.
  bool chat_prompt = false;
  std::string logits_out;      // file for the raw float32 logits rows ("" = none)
  std::string trace_path;      // trace file ("" = no trace), trace/trace_file.h
  std::string trace_dump;      // globs of tensor names whose values the trace stores
  std::string trace_metadata;  // JSON stored in the trace header
  // A trace hook of the caller's (Forward::set_trace; not with trace_path): the Python
  // package's trace() collects the named intermediates with it.
  TraceHook trace_hook;
  std::string perturb;               // test hook "LAYER:OP:POS" (Forward::set_perturbation)
  bool keep_logits = false;          // return every logits row in GenerateResult::logits
  std::vector<std::string> stop;     // stop strings (cut from the text; --stop)
  std::vector<int32_t> stop_tokens;  // stop token ids besides EOS and EOT (--stop-token)
  bool ignore_eos = false;           // EOS and EOT do not stop (--ignore-eos)
  std::string grammar;               // GBNF the output must match ("" = none; --grammar)
  // Checked between forward passes: true stops the generation there (StopReason::cancelled), the
  // Python package's Ctrl+C.
  std::function<bool()> interrupted;
  // Drafted tokens verified several per forward pass (runtime/speculative.h): the same tokens,
  // text and logits digest as without, only faster. Not with a trace or a perturbation.
  SpeculativeOptions speculative;
};

struct GenerateResult {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated, including a final EOS or EOT if one was sampled
  std::string text;             // the generated text
  StopReason stop_reason = StopReason::none;  // eos, eot, max_tokens or context
  std::string logits_digest;                  // XXH3-128 over every logits row, in order
  int n_ctx = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  int n_eval_rows = 0;  // logits rows evaluated
  std::string kernels;  // the kernel set that ran
  std::string device;   // the device layers that ran ("" on the CPU only)
  // Flip risk: per generated step, logit(top 1) - logit(top 2) of the row it was chosen from.
  // A small gap is where a rounding difference could have changed the token.
  std::vector<float> top2_gaps;
  std::vector<std::vector<float>> logits;  // every row, when GenerateOptions::keep_logits
  SpeculativeCounts speculative;           // with GenerateOptions::speculative
};

// logit(top 1) - logit(top 2) of a row (0 on a tie, +inf with one entry).
float top2_gap(const float* logits, int n);

// Throws tzero::Error for unusable input (a prompt longer than the context, a bad option).
// The session's compute options are used (opt.compute is not).
GenerateResult generate(Session& session, const GenerateOptions& opt,
                        const std::function<void(std::string_view)>& on_text = nullptr);
// The same on a session opened over `model` with opt.compute.
GenerateResult generate(const Model& model, const Vocab& vocab, const GenerateOptions& opt,
                        const std::function<void(std::string_view)>& on_text = nullptr);

}  // namespace tzero
