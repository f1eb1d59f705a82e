// tzero run: generate text from a prompt, streaming it, then print speeds.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "cli/generation_flags.h"
#include "cli/output_files.h"
#include "cli/speculative_flags.h"
#include "distributed/experts.h"
#include "distributed/pipeline.h"
#include "grammar/json_schema.h"
#include "runtime/fingerprint.h"
#include "runtime/generate.h"

namespace tzero::cli {

namespace {

// --gaps without --json: every step's gap on one line, then the smallest and its step.
void print_gaps(const std::vector<float>& gaps) {
  std::string line;
  size_t min_at = 0;
  char buf[32];
  for (size_t i = 0; i < gaps.size(); ++i) {
    std::snprintf(buf, sizeof buf, i ? " %.4g" : "%.4g", double(gaps[i]));
    line += buf;
    if (gaps[i] < gaps[min_at]) min_at = i;
  }
  std::fprintf(stderr, "top-2 logit gaps: %s\n",
               gaps.empty() ? "none (no step ran)" : line.c_str());
  if (!gaps.empty())
    std::fprintf(stderr, "smallest gap: %.4g at step %zu of %zu\n", double(gaps[min_at]),
                 min_at + 1, gaps.size());
}

}  // namespace

Command add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Generate text from a prompt (greedy by default)");
  struct Opts {
    std::string model, prompt, prompt_file, messages_file, chat_template;
    std::string grammar_file, schema_file;
    bool json = false, no_bos = false, gaps = false, force = false;
    ComputeFlags compute;
    SpeculativeFlags speculative;
    GenerateOptions gen;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  auto* prompt_opt =
      sub->add_option("-p,--prompt", o->prompt, "Prompt text (default: empty, BOS only)");
  auto* file_opt = sub->add_option("-f,--file", o->prompt_file,
                                   "Read the prompt from a file (-: standard input)");
  sub->add_option("--messages", o->messages_file,
                  "Chat: read the conversation from this JSON file (an array of {role, content}, "
                  "or a chat request body with \"messages\"), render it with the chat template "
                  "and generate the assistant's reply, as tzero serve's /v1/chat/completions does")
      ->excludes(prompt_opt)
      ->excludes(file_opt);
  sub->add_option("--chat-template", o->chat_template,
                  "With --messages: a named format (llama2, llama3, chatml, ...) instead of the "
                  "model's tokenizer.chat_template (a model without one uses chatml)");
  sub->add_option("-n,--n-predict", o->gen.n_predict, "Tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  add_compute_flags(sub, o->compute);
  add_generation_flags(sub, o->gen.sampling);
  sub->add_option("--trace", o->gen.trace_path,
                  "Record per position and tensor an XXH3-128 hash of every intermediate");
  sub->add_option("--trace-dump", o->gen.trace_dump,
                  "Also store the values of tensors matching these globs (e.g. 'blk.*.ffn_out,"
                  "result_output')");
  sub->add_option("--perturb", o->gen.perturb,
                  "Test hook: flip the last bit of tensor OP of LAYER at position POS "
                  "(LAYER:OP:POS)")
      ->group("");
  sub->add_option("--stop", o->gen.stop,
                  "Stop when the text contains this string (not printed); repeatable");
  sub->add_option("--stop-token", o->gen.stop_tokens,
                  "Stop at this token id besides EOS and end of turn; repeatable");
  sub->add_flag("--ignore-eos", o->gen.ignore_eos,
                "Do not stop at EOS or end of turn (stop tokens and strings still stop)");
  sub->add_option("--grammar", o->grammar_file,
                  "Constrain the output to a GBNF grammar in this file (docs/GRAMMAR.md)");
  sub->add_option("--json-schema", o->schema_file,
                  "Constrain the output to JSON valid under the JSON schema in this file");
  sub->add_flag("--no-bos", o->no_bos, "Do not add the BOS token to the prompt");
  sub->add_flag("--parse-special", o->gen.parse_special,
                "Turn control-token texts in the prompt into those tokens");
  sub->add_flag("--json", o->json, "Print one JSON object instead of streaming text");
  sub->add_flag("--gaps", o->gaps,
                "The logit gap between the two best tokens at every step (how close the text came "
                "to changing): top2_gaps with --json, else two lines on stderr");
  sub->add_option("--logits-out", o->gen.logits_out,
                  "Write every evaluated logits row (float32, little-endian) to this file");
  add_speculative_flags(sub, o->speculative);
  add_force_flag(sub, o->force);
  return {sub, [o] {
            check_output_free(o->gen.trace_path, o->force, "--trace FILE");
            check_output_free(o->gen.logits_out, o->force, "--logits-out FILE");
            if (!o->prompt_file.empty())
              o->gen.prompt = read_text_file(o->prompt_file);
            else
              o->gen.prompt = o->prompt;
            o->gen.add_bos = !o->no_bos;
            check(o->grammar_file.empty() || o->schema_file.empty(),
                  "give --grammar or --json-schema, not both");
            if (!o->grammar_file.empty()) o->gen.grammar = read_text_file(o->grammar_file);
            if (!o->schema_file.empty()) {
              try {
                o->gen.grammar = json_schema_to_gbnf(read_text_file(o->schema_file));
              } catch (const SchemaError& e) {
                throw Error(o->schema_file + ": " + e.what());
              }
            }
            check(o->chat_template.empty() || !o->messages_file.empty(),
                  "--chat-template is used with --messages");
            const std::shared_ptr<Session> session = Session::open(o->model, o->compute.options());
            o->gen.speculative = speculative_options(o->speculative, *session);
            const Mode mode = session->options().mode;
            if (!o->messages_file.empty()) {
              o->gen.prompt = render_chat_file(session->model().gguf(), session->vocab(),
                                               o->messages_file, o->chat_template);
              o->gen.chat_prompt = true;
            }
            // Hashes the whole file: only when a trace or --json reports it.
            std::optional<Fingerprint> fp_once;
            auto fingerprint = [&]() -> const Fingerprint& {
              if (!fp_once) fp_once = session->fingerprint();
              return *fp_once;
            };
            if (!o->gen.trace_path.empty())
              o->gen.trace_metadata = nlohmann::json{
                  {"model", o->model},
                  {"prompt", o->gen.prompt},
                  {"threads", o->compute.n_threads},
                  {"batch", o->compute.n_batch},
                  {"kernels", o->compute.kernels},
                  {"mode", o->compute.mode},
                  {"gpu_layers", o->compute.gpu_layers},
                  {"fingerprint",
                   fingerprint().hash}}.dump();
            std::function<void(std::string_view)> on_text;
            if (!o->json)
              on_text = [](std::string_view s) {
                std::fwrite(s.data(), 1, s.size(), stdout);
                std::fflush(stdout);
              };
            const GenerateResult r = generate(*session, o->gen, on_text);
            // -n 0 evaluates no prompt: no rate. Otherwise a rate over at least a millisecond.
            const std::optional<double> pp_tps =
                r.n_eval_rows > 0 ? measured_rate(double(r.prompt_tokens.size()), r.prompt_seconds)
                                  : std::nullopt;
            const int n_decoded = r.n_eval_rows > 0 ? r.n_eval_rows - 1 : 0;
            const std::optional<double> tg_tps = measured_rate(n_decoded, r.gen_seconds);
            auto json_rate = [](std::optional<double> x) {
              return x ? nlohmann::json(*x) : nlohmann::json();
            };
            if (o->json) {
              nlohmann::json j;
              j["prompt_tokens"] = r.prompt_tokens;
              j["tokens"] = r.tokens;
              j["text"] = r.text;
              j["stop_reason"] = to_string(r.stop_reason);
              j["mode"] = to_string(mode);
              j["logits_digest"] = r.logits_digest;
              if (o->gaps) j["top2_gaps"] = r.top2_gaps;
              j["n_ctx"] = r.n_ctx;
              j["timings"] = {{"prompt_seconds", r.prompt_seconds},
                              {"prompt_tokens_per_s", json_rate(pp_tps)},
                              {"gen_seconds", r.gen_seconds},
                              {"gen_tokens_per_s", json_rate(tg_tps)},
                              {"threads", o->compute.n_threads}};
              j["fingerprint"] = fingerprint().hash;
              j["fingerprint_manifest"] = fingerprint().manifest;
              if (!r.device.empty()) j["device"] = r.device;
              if (const dist::StagePlan* plan = session->stage_plan()) {
                // What crossed each boundary of the ring: every hop carries the same bytes.
                const dist::RingTraffic t = dist::ring_traffic();
                j["ranks"] = {{"n", plan->n_ranks()},
                              {"first_layers", plan->first},
                              {"passes", t.passes},
                              {"rows", t.rows},
                              {"bytes_per_hop", t.pass_bytes},
                              {"most_in_flight", t.most_in_flight},
                              {"bytes_per_row_per_hop",
                               t.rows ? double(t.pass_bytes) / double(t.rows) : 0.0}};
                if (plan->n_expert > 0) {  // rank 0's layers' requests for the experts
                  const dist::ExpertTraffic x = dist::expert_traffic();
                  nlohmann::json first = nlohmann::json::array();
                  for (int rank = 0; rank < plan->n_ranks(); ++rank)
                    first.push_back(plan->experts(rank).first);
                  j["ranks"]["experts"] = {{"first", first},
                                           {"requests", x.requests},
                                           {"slots", x.slots},
                                           {"bytes", x.bytes}};
                }
              }
              if (o->gen.speculative.source != DraftSource::none)
                j["speculative"] = {{"drafted", r.speculative.drafted},
                                    {"accepted", r.speculative.accepted},
                                    {"rejected", r.speculative.drafted - r.speculative.accepted},
                                    {"passes", r.speculative.passes}};
              std::printf("%s\n",
                          j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
            } else {
              std::printf("\n");
              std::fprintf(
                  stderr,
                  "\nprompt: %zu tokens, %s | generation: %zu tokens, %s | threads %d | kernels "
                  "%s | mode %s | stop: %s\nlogits digest: %s\n",
                  r.prompt_tokens.size(), rate_text(pp_tps).c_str(), r.tokens.size(),
                  rate_text(tg_tps).c_str(), o->compute.n_threads, r.kernels.c_str(),
                  to_string(mode), to_string(r.stop_reason), r.logits_digest.c_str());
              if (!r.device.empty()) std::fprintf(stderr, "device: %s\n", r.device.c_str());
              if (o->gen.speculative.source != DraftSource::none)
                std::fprintf(stderr, "speculative: %d drafted, %d accepted, %d passes\n",
                             r.speculative.drafted, r.speculative.accepted, r.speculative.passes);
              if (o->gaps) print_gaps(r.top2_gaps);
            }
            return 0;
          }};
}

}  // namespace tzero::cli
