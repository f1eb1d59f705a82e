#include "runtime/generate.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "backend/backend.h"
#include "base/error.h"
#include "model/forward.h"
#include "runtime/decode_loop.h"
#include "runtime/decode_step.h"
#include "runtime/prompt.h"
#include "runtime/request.h"
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
  const std::shared_ptr<Session> session = Session::over(model, vocab, opt.compute);
  return generate(*session, opt, on_text);
}

GenerateResult generate(Session& session, const GenerateOptions& opt,
                        const std::function<void(std::string_view)>& on_text) {
  const HParams& hp = session.hparams();
  const Vocab& vocab = session.vocab();
  check(opt.n_predict >= 0, "the number of tokens to generate must be >= 0");
  GenerateResult res;
  res.n_ctx = session.n_ctx();

  // The one request path (runtime/request.h), its refusals in the command line's words.
  RequestParams request;
  request.prompt_tokens = !opt.prompt_tokens.empty() ? opt.prompt_tokens
                          : opt.chat_prompt
                              ? tokenize_chat_prompt(vocab, opt.prompt)
                              : tokenize_prompt(vocab, opt.prompt, opt.parse_special, opt.add_bos);
  check(!request.prompt_tokens.empty(), "the prompt is empty and the vocabulary has no BOS token");
  request.max_tokens = std::max(opt.n_predict, 1);  // -n 0 runs no step at all
  request.sampling = opt.sampling;
  request.sampling.logprobs = false;
  request.sampling.top_logprobs = 0;
  request.stop = opt.stop;
  request.stop_tokens = opt.stop_tokens;
  request.ignore_eos = opt.ignore_eos;
  request.grammar = opt.grammar;
  StartedRequest started;
  try {
    started = start_request({vocab, hp, res.n_ctx, Pooling::mean, "", nullptr}, request);
  } catch (const RequestError& e) {
    const std::string flag = e.param == "grammar"       ? "--grammar: "
                             : e.param == "stop_tokens" ? "--stop-token: "
                             : e.param == "prompt"      ? ""
                                                        : e.param + ": ";
    throw Error(flag + e.what() +
                (e.kind == RequestErrorKind::context_length_exceeded ? " (raise it with -c)" : ""));
  }
  res.prompt_tokens = started.params.prompt_tokens;
  const int n_prompt = int(res.prompt_tokens.size());

  std::unique_ptr<FILE, int (*)(FILE*)> logits_file(nullptr, &std::fclose);
  if (!opt.logits_out.empty()) {
    logits_file.reset(std::fopen(opt.logits_out.c_str(), "wb"));
    check(logits_file != nullptr, opt.logits_out + ": cannot create: " + std::strerror(errno));
  }

  res.kernels = session.kernels_label();
  const auto fwd_ptr = session.make_forward();
  Forward& fwd = *fwd_ptr;
  if (fwd.device()) res.device = fwd.device()->describe();
  std::unique_ptr<TraceRecorder> recorder;
  if (!opt.trace_path.empty()) {
    recorder = std::make_unique<TraceRecorder>(opt.trace_path, opt.trace_metadata, opt.trace_dump);
    fwd.set_trace(recorder->hook());
  } else if (opt.trace_hook) {
    fwd.set_trace(opt.trace_hook);
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
  const std::unique_ptr<Drafter> drafter = make_drafter(session, opt.speculative);
  check(!drafter || (opt.trace_path.empty() && !opt.trace_hook && opt.perturb.empty()),
        "--trace and --perturb follow plain decoding's one-token passes: not with speculative "
        "decoding");
  KvCache kv(hp, res.n_ctx, session.options().kv_type, session.local_layers());
  fwd.prepare(kv.store());
  DecodeStep decode(vocab, started.params.sampling, started.rules, res.prompt_tokens);
  if (started.constraint) decode.constrain(std::move(started.constraint));
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
  auto interrupted = [&] { return opt.interrupted && opt.interrupted(); };

  auto t0 = std::chrono::steady_clock::now();
  if (opt.n_predict > 0) {
    for (int p = 0; p < n_prompt; p += fwd.n_batch()) {
      const int n = std::min(fwd.n_batch(), n_prompt - p);
      fwd.eval(&res.prompt_tokens[size_t(p)], n, p, kv,
               p + n == n_prompt ? logits.data() : nullptr);
      if (p + n < n_prompt && interrupted()) {
        res.stop_reason = StopReason::cancelled;
        res.prompt_seconds = seconds_since(t0);
        return res;
      }
    }
  }
  res.prompt_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  res.stop_reason = StopReason::max_tokens;  // also when nothing is generated (-n 0)
  bool cancelled = false;
  if (opt.n_predict > 0) {
    DecodeLoop loop{fwd, kv, decode, drafter.get(), opt.speculative};
    loop.on_row = [&](const std::vector<float>&) { record(); };
    loop.on_step = [&](const StepResult& step) {
      emit(step.text);
      emit(step.tail);
    };
    loop.interrupted = interrupted;
    const DecodeLoopEnd end = run_decode_loop(loop, logits, n_prompt);
    cancelled = end.cancelled;
    res.speculative = end.counts;
  }
  if (decode.done()) res.stop_reason = decode.stop_reason();
  if (cancelled) res.stop_reason = StopReason::cancelled;
  if (res.stop_reason == StopReason::grammar_budget)
    throw Error("--grammar: at generated token " + std::to_string(decode.n_generated() + 1) + ", " +
                grammar_budget_message());
  res.tokens.assign(decode.tokens().begin() + n_prompt, decode.tokens().end());
  res.gen_seconds = seconds_since(t0);
  res.logits_digest = decode.digest();
  return res;
}

}  // namespace tzero
