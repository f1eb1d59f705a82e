// tzero chat: an interactive chat in the terminal. Each line read from stdin is a user message;
// the conversation so far is rendered with the chat template (chat/chat_template.h) with
// add_generation_prompt, tokenized with special-token parsing, and the reply is generated and
// streamed until EOS, EOT, -n tokens or a full context (the decode step's stop rules,
// runtime/decode_step.h). EOF or "/exit" ends it.
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

#include "backend/backends.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "chat/chat_template.h"
#include "cli/commands.h"
#include "format/gguf.h"
#include "kernels/kernel_set.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "runtime/decode_step.h"
#include "runtime/prompt.h"
#include "tokenizer/vocab.h"

namespace tzero::cli {

namespace {

struct ChatOpts {
  std::string model, template_name, system;
  int n_predict = 256, n_threads = 1, n_ctx = 0;
  float temperature = 0.0f;
  uint64_t seed = 0;
  bool render = false, verbose = false, no_mmap = false;
};

std::string template_source(const GgufFile& f, const std::string& name) {
  if (!name.empty()) return named_chat_template(name);
  const std::string t = f.get_string("tokenizer.chat_template");
  if (t.empty()) {
    std::string names;
    for (const auto& n : chat_template_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error(f.path() +
                ": no tokenizer.chat_template in the file; name a format with "
                "--chat-template NAME (" +
                names + ")");
  }
  return t;
}

std::string special_text(const Vocab& v, int id) {
  return id >= 0 ? std::string(v.text(id)) : std::string();
}

int render(const ChatOpts& o) {
  const GgufFile f(o.model);
  const Vocab vocab = Vocab::from_gguf(f);
  const ChatTemplate tmpl(template_source(f, o.template_name));
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  nlohmann::ordered_json in;
  try {
    in = nlohmann::ordered_json::parse(input);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("--render: stdin is not JSON: ") + e.what());
  }
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (in.is_array())
    vars["messages"] = in;
  else if (in.is_object())
    vars = in;
  check(vars.contains("messages") && vars["messages"].is_array(),
        "--render: stdin must be a JSON array of messages or an object with \"messages\"");
  if (!vars.contains("add_generation_prompt")) vars["add_generation_prompt"] = true;
  if (!vars.contains("bos_token")) vars["bos_token"] = special_text(vocab, vocab.bos());
  if (!vars.contains("eos_token")) vars["eos_token"] = special_text(vocab, vocab.eos());
  const std::string out = tmpl.render(vars);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int chat(const ChatOpts& o) {
  auto model = Model::load(o.model, !o.no_mmap);
  const Vocab vocab = Vocab::from_gguf(model->gguf());
  const ChatTemplate tmpl(template_source(model->gguf(), o.template_name));
  const HParams& hp = model->hparams();
  check(vocab.n_tokens() <= hp.n_vocab, "the tokenizer has more tokens than the model");
  const int n_ctx = hp.context_or_default(o.n_ctx);
  const std::string bos = special_text(vocab, vocab.bos()), eos = special_text(vocab, vocab.eos());

  ThreadPool pool(o.n_threads);
  const auto fwd_ptr =
      make_forward(*model, pool, {n_ctx, std::min(64, n_ctx), select_kernels("auto"), false, 0});
  Forward& fwd = *fwd_ptr;
  KvCache kv(hp, n_ctx);
  SamplingParams sampling;
  sampling.temperature = o.temperature;
  sampling.seed = o.seed;
  std::vector<float> logits(size_t(hp.n_vocab));  // (n_vocab): the row the next token comes from
  std::vector<int32_t> cached;  // the tokens whose keys and values are in kv, in order
  int step = 0;                 // sampler steps over the whole chat (the next turn's first)

  std::vector<ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  const bool tty = isatty(STDIN_FILENO);
  std::string line;
  while (true) {
    if (tty) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({"user", line});

    const std::string prompt = tmpl.apply(messages, true, bos, eos);
    // BOS by the one rule (runtime/prompt.h): none when the template wrote it.
    const std::vector<int32_t> tokens = tokenize_chat_prompt(vocab, prompt);
    check(!tokens.empty(), "the prompt is empty and the vocabulary has no BOS token");
    check(int(tokens.size()) < n_ctx, "the conversation is " + std::to_string(tokens.size()) +
                                          " tokens, more than the context of " +
                                          std::to_string(n_ctx) + " tokens (raise it with -c)");
    size_t keep = 0;
    while (keep < cached.size() && keep + 1 < tokens.size() && cached[keep] == tokens[keep]) ++keep;
    for (size_t p = keep; p < tokens.size(); p += size_t(fwd.n_batch())) {
      const int n = int(std::min(size_t(fwd.n_batch()), tokens.size() - p));
      fwd.eval(&tokens[p], n, int(p), kv, p + size_t(n) == tokens.size() ? logits.data() : nullptr);
    }
    cached = tokens;

    StopRules rules;
    rules.max_tokens = o.n_predict;
    rules.n_ctx = n_ctx;
    DecodeStep decode(vocab, sampling, rules, tokens, step);
    std::string reply;
    auto put = [&](const std::string& s) {
      reply += s;
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };
    while (true) {
      const StepResult r = decode.step(logits.data(), hp.n_vocab);
      put(r.text);
      put(r.tail);
      if (r.stop != StopReason::none) break;
      fwd.eval(&r.token, 1, int(cached.size()), kv, logits.data());
      cached.push_back(r.token);
    }
    step += decode.n_generated();
    std::printf("\n");
    std::fflush(stdout);
    if (o.verbose) {
      const std::vector<int32_t> generated(decode.tokens().begin() + decode.n_prompt(),
                                           decode.tokens().end());
      const nlohmann::json j = {{"prompt_tokens", tokens},
                                {"tokens", generated},
                                {"stop_reason", to_string(decode.stop_reason())},
                                {"logits_digest", decode.digest()}};
      std::fprintf(stderr, "%s\n", j.dump().c_str());
    }
    messages.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace

Command add_chat(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "chat",
      "Chat in the terminal: one user message per line, EOF or /exit ends (each turn renders "
      "the whole conversation again with the chat template; the cache keeps the unchanged "
      "prefix)");
  auto o = std::make_shared<ChatOpts>();
  o->n_threads = default_threads();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_flag("--no-mmap", o->no_mmap,
                "Read the model file into memory instead of mapping it (for files replaced in "
                "place: a mapped file truncated while in use is a SIGBUS)");
  sub->add_option("--chat-template", o->template_name,
                  "Named format: llama2, llama3, chatml, mistral, phi3, gemma, deepseek "
                  "(default: tokenizer.chat_template from the file)");
  sub->add_option("--system", o->system, "System message at the start of the conversation");
  sub->add_option("-n,--n-predict", o->n_predict, "Most tokens per reply")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("-t,--threads", o->n_threads, "Threads (results do not depend on it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("-c,--ctx-size", o->n_ctx, "Context size (0: min(trained, 4096))")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--temp", o->temperature, "Temperature (0: greedy)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--seed", o->seed, "Sampling seed (used when --temp > 0)")->capture_default_str();
  sub->add_flag("--verbose", o->verbose,
                "After each reply, print one JSON line on stderr: prompt_tokens, tokens (the "
                "generated ids), stop_reason and logits_digest, as tzero run --json names them");
  sub->add_flag("--render", o->render,
                "Print the prompt the template renders for a conversation read as JSON from "
                "stdin (an array of {role, content} or an object with messages), then exit");
  return {sub, [o] { return o->render ? render(*o) : chat(*o); }};
}

}  // namespace tzero::cli
