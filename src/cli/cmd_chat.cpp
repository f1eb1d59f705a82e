// tzero chat: an interactive chat in the terminal. Each line read from stdin is a user message;
// the conversation so far is rendered with the chat template (the one rule of
// chat/template_choice.h: --chat-template NAME|FILE, the model's, else chatml) with
// add_generation_prompt, tokenized with special-token parsing, and the reply is generated and
// streamed to stdout until EOS, EOT, -n tokens or a full context (the decode step's stop rules,
// runtime/decode_step.h).
//
// stdout carries only the model's replies (each ends with a newline); the banner, /help, notes
// and the "> " prompt (a terminal only) go to stderr, so piped use works. Lines starting with
// "/" are commands, never sent to the model (cli/chat_commands.h).
//
// Ctrl+C while a reply is written stops it between two tokens: what was written stays in the
// conversation as the assistant's turn (llama-cli keeps it too) and the prompt comes back.
// Ctrl+C during the prompt's evaluation drops that message. Ctrl+C at the prompt ends the chat
// with exit status 130 (the shell's status for SIGINT, as llama-cli exits); EOF (Ctrl+D),
// /exit and /quit end it with 0.
//
// Every turn renders and tokenizes the whole conversation again; the key/value cache is kept
// for the longest prefix that is unchanged, so only the new tokens are evaluated.
//
// `tzero chat --render` prints the rendered prompt of a conversation read as JSON from stdin
// (an array of {role, content}, or an object with "messages" and optionally
// "add_generation_prompt" (default true), "bos_token", "eos_token", "tools", ...), for tests.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "chat/chat_template.h"
#include "cli/chat_commands.h"
#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "cli/generation_flags.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "cli/speculative_flags.h"
#include "format/gguf.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/decode_loop.h"
#include "runtime/decode_step.h"
#include "runtime/prompt.h"
#include "runtime/request.h"
#include "runtime/session.h"
#include "tokenizer/vocab.h"

namespace tzero::cli {

namespace {

constexpr int kExitInterrupted = 130;  // 128 + SIGINT

struct ChatOpts {
  std::string model, template_option, system;
  int n_predict = 256;
  ComputeFlags compute;
  SamplingParams sampling;
  SpeculativeFlags speculative;
  bool render = false, verbose = false, ignore_eos = false;
};

int render(const ChatOpts& o) {
  const GgufFile f(o.model);
  const Vocab vocab = Vocab::from_gguf(f);
  const ConversationTemplate tmpl = load_chat_template(f, vocab, o.template_option);
  if (tmpl.choice.fallback)
    std::fprintf(stderr, "tzero: %s\n", chat_template_fallback_note(f.path()).c_str());
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  nlohmann::ordered_json in;
  try {
    in = parse_json_bounded<nlohmann::ordered_json>(input);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("--render: stdin is not JSON: ") + excerpt(e.what()));
  }
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (in.is_array())
    vars["messages"] = in;
  else if (in.is_object())
    vars = in;
  check(vars.contains("messages") && vars["messages"].is_array(),
        "--render: stdin must be a JSON array of messages or an object with \"messages\"");
  if (!vars.contains("add_generation_prompt")) vars["add_generation_prompt"] = true;
  if (!vars.contains("bos_token")) vars["bos_token"] = tmpl.bos_text;
  if (!vars.contains("eos_token")) vars["eos_token"] = tmpl.eos_text;
  const std::string out = tmpl.parsed.render(vars);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

std::string number(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

void note(const std::string& s) {
  std::fprintf(stderr, "tzero chat: %s\n", s.c_str());
}

// The conversation and the model state behind it.
class ChatSession {
 public:
  explicit ChatSession(const ChatOpts& o)
      : o_(o),
        session_(Session::open(o.model, o.compute.options())),
        vocab_(session_->vocab()),
        tmpl_(load_chat_template(session_->model().gguf(), session_->vocab(), o.template_option)),
        hp_(session_->hparams()),
        n_ctx_(session_->n_ctx()),
        kv_(hp_, n_ctx_, session_->options().kv_type, session_->local_layers()),
        logits_(size_t(hp_.n_vocab)) {
    fwd_ = session_->make_forward();
    fwd_->prepare(kv_.store());
    if (fwd_->device()) device_ = fwd_->device()->describe();
    speculative_ = speculative_options(o.speculative, *session_);
    drafter_ = make_drafter(*session_, speculative_);
    reset();
  }

  // On stderr: what is in use, and how to get help.
  void banner() const {
    note("model " + o_.model + " (" + hp_.arch_name + ", " + std::to_string(hp_.n_layer) +
         " layers, a vocabulary of " + std::to_string(vocab_.n_tokens()) + " tokens)");
    note("template " + tmpl_.choice.label);
    note("mode " + o_.compute.mode + ", kernels " + session_->kernels_label() + ", threads " +
         std::to_string(o_.compute.n_threads) + ", context " + std::to_string(n_ctx_) +
         (device_.empty() ? "" : ", device " + device_) +
         (o_.sampling.temperature > 0 ? ", temperature " + number(o_.sampling.temperature) +
                                            ", seed " + std::to_string(o_.sampling.seed)
                                      : ", greedy"));
    note("type /help for the commands; Ctrl+C stops a reply; /exit or Ctrl+D ends the chat");
  }

  // The conversation starts again (the system message stays, and so does the sampler: the
  // same messages give the same replies as in a fresh chat).
  void reset() {
    messages_.clear();
    if (!o_.system.empty()) messages_.push_back({"system", o_.system});
    step_ = 0;
  }

  // One user message and its reply, streamed to stdout.
  void turn(const std::string& text) {
    messages_.push_back({"user", text});
    const std::string prompt = tmpl_.render(messages_);
    // BOS by the one rule (runtime/prompt.h): none when the template wrote it.
    const std::vector<int32_t> tokens = tokenize_chat_prompt(vocab_, prompt);
    check(!tokens.empty(), "the prompt is empty and the vocabulary has no BOS token");
    if (int(tokens.size()) >= n_ctx_) {
      messages_.pop_back();
      note("the conversation would be " + std::to_string(tokens.size()) +
           " tokens, more than the context of " + std::to_string(n_ctx_) +
           " tokens: not sent; /reset starts again (or raise -c)");
      return;
    }
    if (!prefill(tokens)) {
      messages_.pop_back();
      note("stopped (Ctrl+C) before the reply began; the message was not kept");
      return;
    }

    // The one request path (runtime/request.h): its stop rules, the sampling checked.
    RequestParams request;
    request.prompt_tokens = tokens;
    request.max_tokens = o_.n_predict;
    request.ignore_eos = o_.ignore_eos;
    request.sampling = o_.sampling;
    const StartedRequest started =
        start_request({vocab_, hp_, n_ctx_, Pooling::mean, "", nullptr}, request);
    DecodeStep decode(vocab_, started.params.sampling, started.rules, tokens, step_);
    std::string reply;
    auto put = [&](const std::string& s) {
      reply += s;
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };
    // Between two passes a Ctrl+C stops the reply: the last token is in it, not fed.
    DecodeLoop loop{*fwd_, kv_, decode, drafter_.get(), speculative_};
    loop.on_step = [&](const StepResult& r) {
      put(r.text);
      put(r.tail);
    };
    loop.interrupted = [] { return interrupt::requested(); };
    const DecodeLoopEnd end = run_decode_loop(loop, logits_, int(cached_.size()));
    const bool interrupted = end.cancelled;
    cached_.assign(decode.tokens().begin(), decode.tokens().begin() + end.pos);
    step_ += decode.n_generated();
    std::printf("\n");
    std::fflush(stdout);
    if (interrupted) note("reply stopped (Ctrl+C); it stays in the conversation");
    if (o_.verbose) {
      const std::vector<int32_t> generated(decode.tokens().begin() + decode.n_prompt(),
                                           decode.tokens().end());
      nlohmann::json j = {
          {"prompt_tokens", tokens},
          {"tokens", generated},
          {"stop_reason", interrupted ? "cancelled" : to_string(decode.stop_reason())},
          {"logits_digest", decode.digest()}};
      if (drafter_)
        j["speculative"] = {{"drafted", end.counts.drafted},
                            {"accepted", end.counts.accepted},
                            {"rejected", end.counts.drafted - end.counts.accepted},
                            {"passes", end.counts.passes}};
      std::fprintf(stderr, "%s\n", j.dump().c_str());
    }
    messages_.push_back({"assistant", reply});
  }

 private:
  // Evaluates what of `tokens` is not in the cache yet, leaving the last row in logits_.
  // False when a Ctrl+C stopped it (the cache then holds the part evaluated).
  bool prefill(const std::vector<int32_t>& tokens) {
    size_t keep = 0;
    while (keep < cached_.size() && keep + 1 < tokens.size() && cached_[keep] == tokens[keep])
      ++keep;
    // A recurrent (linear-attention) state only moves forward: unless the whole cache is a
    // prefix of the new prompt, the prompt is evaluated again from position 0.
    if (hp_.recurrent() && keep < cached_.size()) keep = 0;
    cached_.resize(keep);
    for (size_t p = keep; p < tokens.size(); p += size_t(fwd_->n_batch())) {
      if (interrupt::requested()) return false;
      const int n = int(std::min(size_t(fwd_->n_batch()), tokens.size() - p));
      fwd_->eval(&tokens[p], n, int(p), kv_,
                 p + size_t(n) == tokens.size() ? logits_.data() : nullptr);
      cached_.insert(cached_.end(), tokens.begin() + long(p), tokens.begin() + long(p) + n);
    }
    return true;
  }

  const ChatOpts& o_;
  std::shared_ptr<Session> session_;  // the model, pool, kernels and context
  const Vocab& vocab_;
  ConversationTemplate tmpl_;
  const HParams& hp_;
  int n_ctx_;
  std::string device_;
  KvCache kv_;
  std::unique_ptr<Forward> fwd_;
  SpeculativeOptions speculative_;
  std::unique_ptr<Drafter> drafter_;  // null: plain decoding
  std::vector<float> logits_;         // (n_vocab): the row the next token comes from
  std::vector<int32_t> cached_;       // the tokens whose keys and values are in kv_, in order
  int step_ = 0;                      // sampler steps over the whole chat (the next turn's first)
  std::vector<ChatMessage> messages_;
};

int chat(const ChatOpts& o) {
  ChatSession session(o);
  interrupt::install();
  session.banner();
  const bool tty = isatty(STDIN_FILENO);
  LineReader reader(STDIN_FILENO);
  std::string line;
  while (true) {
    interrupt::clear();  // a Ctrl+C that stopped a reply is spent
    if (tty) std::fprintf(stderr, "> ");
    std::fflush(stderr);
    const LineReader::Status status = reader.next(line);
    if (status == LineReader::Status::eof) break;
    if (status == LineReader::Status::interrupted) {
      std::fprintf(stderr, "\n");
      return kExitInterrupted;
    }
    const ChatInput in = parse_chat_input(line);
    switch (in.kind) {
      case ChatInput::Kind::empty:
        break;
      case ChatInput::Kind::help:
        std::fputs(chat_help_text(), stderr);
        break;
      case ChatInput::Kind::reset:
        session.reset();
        note("the conversation starts again");
        break;
      case ChatInput::Kind::exit:
        return 0;
      case ChatInput::Kind::unknown:
        note("unknown command '" + in.text +
             "': not sent (/help lists the commands; start a line with // to send a /)");
        break;
      case ChatInput::Kind::message:
        session.turn(in.text);
        break;
    }
  }
  return 0;
}

}  // namespace

Command add_chat(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "chat",
      "Chat in the terminal: one user message per line; /help lists the commands; Ctrl+C "
      "stops a reply, EOF or /exit ends (each turn renders the whole conversation again with "
      "the chat template; the cache keeps the unchanged prefix)");
  auto o = std::make_shared<ChatOpts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_option("--chat-template", o->template_option,
                  "A named format (llama2, llama3, chatml, mistral, phi3, gemma, deepseek) or a "
                  "Jinja template file (default: tokenizer.chat_template from the file, else "
                  "chatml)");
  sub->add_option("--system", o->system, "System message at the start of the conversation");
  sub->add_option("-n,--n-predict", o->n_predict, "Most tokens per reply")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  add_compute_flags(sub, o->compute);
  add_generation_flags(sub, o->sampling);
  add_speculative_flags(sub, o->speculative);
  sub->add_flag("--ignore-eos", o->ignore_eos,
                "Do not stop a reply at EOS or end of turn (-n, the context and Ctrl+C still "
                "do)");
  sub->add_flag("--verbose", o->verbose,
                "After each reply, print one JSON line on stderr: prompt_tokens, tokens (the "
                "generated ids), stop_reason (cancelled: Ctrl+C) and logits_digest, as tzero "
                "run --json names them");
  sub->add_flag("--render", o->render,
                "Print the prompt the template renders for a conversation read as JSON from "
                "stdin (an array of {role, content} or an object with messages), then exit");
  return {sub, [o] { return o->render ? render(*o) : chat(*o); }};
}

}  // namespace tzero::cli
