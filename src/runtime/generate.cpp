#include "runtime/generate.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "backend/backend.h"
#include "backend/backends.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "model/forward.h"
#include "ops/registry.h"
#include "runtime/decode_step.h"
#include "runtime/prompt.h"
#include "trace/recorder.h"

namespace tzero {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

float top2_gap(const float* logits, int n) {
  float a = -INFINITY, b = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (logits[i] > a) {
      b = a;
      a = logits[i];
    } else if (logits[i] > b) {
      b = logits[i];
    }
  }
  return n > 1 ? a - b : INFINITY;
}

GenerateResult generate(const Model& model, const Vocab& vocab, const GenerateOptions& opt,
                        const std::function<void(std::string_view)>& on_text) {
  const HParams& hp = model.hparams();
  check(vocab.n_tokens() <= hp.n_vocab, "the tokenizer has " + std::to_string(vocab.n_tokens()) +
                                            " tokens but the model's vocabulary is " +
                                            std::to_string(hp.n_vocab));
  check(opt.n_predict >= 0, "the number of tokens to generate must be >= 0");
  check(opt.n_batch >= 1, "the batch size must be >= 1");
  GenerateResult res;
  res.n_ctx = hp.context_or_default(opt.n_ctx);
  check(res.n_ctx <= (1 << 20), "context size is too large");

  res.prompt_tokens = !opt.prompt_tokens.empty() ? opt.prompt_tokens
                      : opt.chat_prompt
                          ? tokenize_chat_prompt(vocab, opt.prompt)
                          : tokenize_prompt(vocab, opt.prompt, opt.parse_special, opt.add_bos);
  for (const int32_t t : res.prompt_tokens)
    check(t >= 0 && t < hp.n_vocab, "prompt token " + std::to_string(t) +
                                        " is outside the vocabulary of " +
                                        std::to_string(hp.n_vocab));
  check(!res.prompt_tokens.empty(), "the prompt is empty and the vocabulary has no BOS token");
  const int n_prompt = int(res.prompt_tokens.size());
  check(n_prompt <= res.n_ctx, "the prompt is " + std::to_string(n_prompt) +
                                   " tokens, longer than the context of " +
                                   std::to_string(res.n_ctx) + " tokens (raise it with -c)");

  std::unique_ptr<FILE, int (*)(FILE*)> logits_file(nullptr, &std::fclose);
  if (!opt.logits_out.empty()) {
    logits_file.reset(std::fopen(opt.logits_out.c_str(), "wb"));
    check(logits_file != nullptr, opt.logits_out + ": cannot create: " + std::strerror(errno));
  }

  ThreadPool pool(opt.n_threads);
  const KernelSet kernels = with_overrides(select_kernels(opt.kernels), opt.op_overrides);
  res.kernels = kernels.name;
  for (const auto& o : opt.op_overrides) res.kernels += " " + o;
  const int gpu_layers = parse_gpu_layers(opt.gpu_layers, hp.n_layer);
  check_gpu_mode(gpu_layers, opt.mode);
  const auto fwd_ptr = make_forward(
      model, pool,
      {res.n_ctx, std::min(opt.n_batch, res.n_ctx), kernels, opt.mode == Mode::fast, gpu_layers});
  Forward& fwd = *fwd_ptr;
  if (fwd.device()) res.device = fwd.device()->describe();
  std::unique_ptr<TraceRecorder> recorder;
  if (!opt.trace_path.empty()) {
    recorder = std::make_unique<TraceRecorder>(opt.trace_path, opt.trace_metadata, opt.trace_dump);
    fwd.set_trace(recorder->hook());
  }
  if (!opt.perturb.empty()) {
    const size_t a = opt.perturb.find(':'), b = opt.perturb.rfind(':');
    check(a != std::string::npos && b != a, "--perturb wants LAYER:OP:POS");
    try {
      fwd.set_perturbation(std::stoi(opt.perturb.substr(0, a)),
                           opt.perturb.substr(a + 1, b - a - 1),
                           std::stoi(opt.perturb.substr(b + 1)));
    } catch (const std::logic_error&) {
      throw Error("--perturb wants LAYER:OP:POS, not '" + opt.perturb + "'");
    }
  }
  KvCache kv(hp, res.n_ctx, parse_kv_type(opt.kv_type));
  SamplingParams sampling = opt.sampling;
  sampling.logprobs = false;
  sampling.top_logprobs = 0;
  StopRules rules;
  rules.max_tokens = std::max(opt.n_predict, 1);  // -n 0 runs no step at all
  rules.n_ctx = res.n_ctx;
  rules.stop = opt.stop;
  rules.stop_tokens = opt.stop_tokens;
  rules.ignore_eos = opt.ignore_eos;
  for (const int32_t t : opt.stop_tokens)
    check(t >= 0 && t < hp.n_vocab, "--stop-token " + std::to_string(t) +
                                        " is outside the vocabulary of " +
                                        std::to_string(hp.n_vocab));
  DecodeStep decode(vocab, sampling, rules, res.prompt_tokens);
  if (!opt.grammar.empty()) {
    std::shared_ptr<const Grammar> grammar;
    try {
      grammar = std::make_shared<const Grammar>(compile_gbnf(opt.grammar));
    } catch (const GrammarError& e) {
      throw Error(e.what());
    }
    std::vector<int32_t> ends = opt.stop_tokens;
    if (!opt.ignore_eos) {
      ends.push_back(vocab.eos());
      ends.insert(ends.end(), vocab.turn_ends().begin(), vocab.turn_ends().end());
    }
    try {
      decode.constrain(std::make_unique<TokenConstraint>(
          std::move(grammar), std::make_shared<const TokenTrie>(vocab), std::move(ends)));
    } catch (const GrammarBudgetExceeded& e) {
      throw Error(std::string("--grammar: ") + e.what());
    }
  }
  std::vector<float> logits(size_t(hp.n_vocab));  // (n_vocab): the row the next token comes from

  auto record = [&] {
    res.top2_gaps.push_back(top2_gap(logits.data(), hp.n_vocab));
    if (opt.keep_logits) res.logits.push_back(logits);
    ++res.n_eval_rows;
    if (logits_file && std::fwrite(logits.data(), sizeof(float), logits.size(),
                                   logits_file.get()) != logits.size())
      throw Error(opt.logits_out + ": write failed");
  };
  auto emit = [&](const std::string& piece) {
    res.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
  };

  auto t0 = std::chrono::steady_clock::now();
  if (opt.n_predict > 0) {
    for (int p = 0; p < n_prompt; p += fwd.n_batch()) {
      const int n = std::min(fwd.n_batch(), n_prompt - p);
      fwd.eval(&res.prompt_tokens[size_t(p)], n, p, kv,
               p + n == n_prompt ? logits.data() : nullptr);
    }
  }
  res.prompt_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  res.stop_reason = StopReason::max_tokens;  // also when nothing is generated (-n 0)
  for (int pos = n_prompt; opt.n_predict > 0; ++pos) {
    record();
    const StepResult step = decode.step(logits.data(), hp.n_vocab);
    emit(step.text);
    emit(step.tail);
    if (step.stop != StopReason::none) break;
    fwd.eval(&step.token, 1, pos, kv, logits.data());
  }
  if (decode.done()) res.stop_reason = decode.stop_reason();
  if (res.stop_reason == StopReason::grammar_budget)
    throw Error("--grammar: at generated token " + std::to_string(decode.n_generated() + 1) + ", " +
                grammar_budget_message());
  res.tokens.assign(decode.tokens().begin() + n_prompt, decode.tokens().end());
  res.gen_seconds = seconds_since(t0);
  res.logits_digest = decode.digest();
  return res;
}

}  // namespace tzero
