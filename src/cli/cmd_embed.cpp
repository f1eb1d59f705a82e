// tzero embed: the embedding of a text (or of each line of a file) through the batched engine,
// as POST /v1/embeddings computes it (pool-v1, docs/DETERMINISM.md): the same bits alone or
// batched, whatever -t, -b or --parallel.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/hash.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "runtime/session.h"
#include "tzero/engine.h"

namespace tzero::cli {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace

Command add_embed(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "embed", "Embedding of a text, or of each line of a file (pooled, L2-normalised)");
  struct Opts {
    tzero::EngineOptions engine;
    ComputeFlags compute;
    std::string prompt, file, pooling = "model";
    int dimensions = 0;
    bool json = false, parse_special = false;
  };
  auto o = std::make_shared<Opts>();
  o->engine.max_seqs = 16;
  o->engine.max_queue = 1 << 20;
  sub->add_option("-m,--model", o->engine.model_path, "GGUF model file")->required();
  auto* prompt = sub->add_option("-p,--prompt", o->prompt, "Text to embed");
  auto* file = sub->add_option("-f,--file", o->file,
                               "Embed each non-empty line of this file (-: standard input)");
  file->excludes(prompt);
  sub->add_option("--pooling", o->pooling,
                  "model (the file's pooling_type, else mean), mean, cls or last")
      ->capture_default_str()
      ->check(CLI::IsMember({"model", "mean", "cls", "last"}));
  sub->add_option("--dimensions", o->dimensions,
                  "Keep the first N components, then renormalise (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  o->compute.n_batch = o->engine.max_batch_tokens;
  add_compute_flags(sub, o->compute, kAllCompute,
                    "Tokens per forward pass (results do not depend on it)");
  sub->add_option("--parallel", o->engine.max_seqs,
                  "Inputs computed together (results do not depend on it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--parse-special", o->parse_special,
                "Turn control-token texts in the input into those tokens");
  sub->add_flag("--json", o->json,
                "Print one JSON object: every embedding with its token count and digest");
  return {sub, [o, prompt, file] {
            if (!*prompt && !*file)
              throw Error("embed: give -p TEXT, or -f FILE (one text a line; -: standard input)");
            if (*prompt && o->prompt.empty()) throw Error("embed: -p is empty: nothing to embed");
            std::vector<std::string> inputs;
            if (*file)
              inputs = lines_of(read_text_file(o->file));
            else
              inputs.push_back(o->prompt);
            if (inputs.empty()) throw Error(o->file + ": no line to embed");
            const Pooling pooling = *parse_pooling(o->pooling);
            o->engine.max_batch_tokens = o->compute.n_batch;
            tzero::Engine engine(Session::open(o->engine.model_path, o->compute.options()),
                                 o->engine);
            if (pooling == Pooling::model && engine.info().pooling == Pooling::none)
              throw Error(o->engine.model_path + ": " + engine.info().pooling_note);

            struct Out {
              std::vector<float> v;
              int n_tokens = 0;
            };
            std::vector<Out> outs(inputs.size());
            const auto t0 = std::chrono::steady_clock::now();
            for (size_t i = 0; i < inputs.size(); ++i) {
              RequestParams r;
              r.prompt = inputs[i];
              r.parse_special = o->parse_special;
              r.embedding = pooling;
              r.embedding_dims = o->dimensions;
              try {
                engine.submit(r, [&outs, i](const TokenEvent& e) {
                  if (!e.finished) return;
                  outs[i].v = e.embedding;
                  outs[i].n_tokens = e.n_prompt;
                });
              } catch (const RequestError& e) {
                throw Error((o->file.empty() ? std::string("the prompt")
                                             : o->file + ":" + std::to_string(i + 1)) +
                            ": " + e.what());
              }
            }
            engine.run_until_idle();
            const double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            int64_t n_tokens = 0;
            for (const Out& out : outs) n_tokens += out.n_tokens;
            const std::optional<double> tps = measured_rate(double(n_tokens), secs);
            const ModelInfo& info = engine.info();
            const char* pooled = to_string(pooling == Pooling::model ? info.pooling : pooling);
            if (o->json) {
              nlohmann::json data = nlohmann::json::array();
              for (size_t i = 0; i < outs.size(); ++i)
                data.push_back(
                    {{"index", i},
                     {"n_tokens", outs[i].n_tokens},
                     {"digest", xxh128_hex(outs[i].v.data(), outs[i].v.size() * sizeof(float))},
                     {"embedding", outs[i].v}});
              nlohmann::json j = {
                  {"model", info.name},
                  {"pooling", pooled},
                  {"pooling_source", pooling == Pooling::model ? info.pooling_note : "option"},
                  {"n_embd", info.n_embd},
                  {"dimensions", outs[0].v.size()},
                  {"fingerprint", info.fingerprint},
                  {"data", data},
                  {"timings",
                   {{"seconds", secs},
                    {"tokens", n_tokens},
                    {"tokens_per_s", tps ? nlohmann::json(*tps) : nlohmann::json()},
                    {"threads", o->compute.n_threads}}}};
              std::printf("%s\n",
                          j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
            } else {
              for (const Out& out : outs) {
                std::string line;
                char buf[32];
                for (size_t d = 0; d < out.v.size(); ++d) {
                  std::snprintf(buf, sizeof buf, d ? " %.9g" : "%.9g", double(out.v[d]));
                  line += buf;
                }
                std::printf("%s\n", line.c_str());
              }
              std::fprintf(stderr,
                           "embedded %zu input(s), %lld tokens in %.3f s (%s) | "
                           "pooling %s | %zu dimensions | threads %d\n",
                           outs.size(), static_cast<long long>(n_tokens), secs,
                           rate_text(tps).c_str(), pooled, outs[0].v.size(), o->compute.n_threads);
            }
            return 0;
          }};
}

}  // namespace tzero::cli
