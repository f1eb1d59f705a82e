// tzero bench: prompt processing (prefill) and token generation (decode) speed of a model, as
// llama.cpp's llama-bench measures them: pp = one forward pass over p tokens; tg = n
// single-token passes; both from an empty context, or after d tokens already in the cache
// (-d, llama-bench's --n-depth: long-context speed). Each is repeated and averaged.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "model/forward.h"
#include "model/weights.h"
#include "runtime/session.h"
#include "tzero/engine.h"

namespace tzero::cli {

namespace {
struct Stats {
  double mean = 0, sd = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / double(v.size() - 1)) : 0;
  return s;
}
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes of weights one decode step reads: every matmul's matrix (the embedding table is a row
// lookup, unless the output reuses it); of the experts, the k a token chose.
double weight_bytes_per_token(const Model& m) {
  auto bytes = [](const Matrix& w) { return double(w.n_rows) * double(w.row_bytes); };
  const double k = m.hparams().n_expert_used;
  auto experts = [k](const ExpertMatrix& w) {
    return k * double(w.first.n_rows) * double(w.first.row_bytes);
  };
  double b = bytes(m.output());
  for (const LayerWeights& l : m.layers())
    b += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) +
         bytes(l.w_down) + bytes(l.gate_inp) + experts(l.gate_exps) + experts(l.up_exps) +
         experts(l.down_exps) + bytes(l.gate_shexp) + bytes(l.up_shexp) + bytes(l.down_shexp) +
         bytes(l.gate_inp_shexp);
  return b;
}

struct ConcurrencyResult {
  double total_tokens_per_s;   // every generated token over the whole run (prefill included)
  double decode_tokens_per_s;  // tokens generated once every request had its first token
  double seconds;
};

// C requests of p prompt tokens (different for each) and n generated tokens each, submitted at
// once to the batched engine (tzero/engine.h) with C slots.
ConcurrencyResult bench_concurrency(const std::shared_ptr<Session>& session, int c, int p, int n) {
  const int n_vocab = session->hparams().n_vocab;
  tzero::EngineOptions eo;
  eo.max_seqs = c;
  eo.max_batch_tokens = std::max(256, c);
  eo.kv_tokens = c * (p + n + 1);
  eo.max_queue = c;
  tzero::Engine engine(session, eo);
  std::vector<double> first(size_t(c), 0.0);
  std::vector<double> token_times;
  for (int r = 0; r < c; ++r) {
    tzero::RequestParams req;
    for (int i = 0; i < p; ++i)
      req.prompt_tokens.push_back(
          int32_t((size_t(r) * 104729 + size_t(i) * 7919 + 13) % size_t(n_vocab)));
    req.max_tokens = n;
    req.ignore_eos = true;
    engine.submit(req, [&, r](const tzero::TokenEvent& e) {
      if (e.finished) return;
      const double t = now();
      if (first[size_t(r)] == 0.0) first[size_t(r)] = t;
      token_times.push_back(t);
    });
  }
  const double t0 = now();
  engine.run_until_idle();
  const double t1 = now();
  const double all_started = *std::max_element(first.begin(), first.end());
  size_t after = 0;
  for (double t : token_times) after += t > all_started;
  ConcurrencyResult res;
  res.seconds = t1 - t0;
  res.total_tokens_per_s = double(token_times.size()) / (t1 - t0);
  res.decode_tokens_per_s = t1 > all_started ? double(after) / (t1 - all_started) : 0.0;
  return res;
}
}  // namespace

Command add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Measure prefill and decode speed (tokens/s)");
  struct Opts {
    std::string model;
    ComputeFlags compute;
    int n_prompt = 128, n_gen = 64, depth = 0, reps = 3;
    int stream_mib = int(kStreamReadDefaultBytes >> 20);
    std::vector<int> concurrency;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens (0 skips prefill)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16384));
  sub->add_option("-n,--n-gen", o->n_gen, "Generated tokens (0 skips decode)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16384));
  sub->add_option("-d,--n-depth", o->depth,
                  "Tokens already in the KV cache before each test (prefilled once, not timed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 131072));
  sub->add_option("-r,--reps", o->reps, "Repetitions of each test")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  // -c is the concurrency here: the context is what the test needs.
  add_compute_flags(sub, o->compute, kAllCompute & ~kCtx & ~kBatch);
  sub->add_option("-c,--concurrency", o->concurrency,
                  "Requests in flight at once through the batched engine (one or more values: "
                  "aggregate generation tokens/s for each; -p is then each request's prompt)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--stream-mib", o->stream_mib,
                  "MiB of the streaming read that measures the machine's memory rate before and "
                  "after the decode test, on the same threads (0 skips it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65536));
  sub->add_flag("--json", o->json, "Print one JSON object");
  return {
      sub, [o] {
        if (!o->concurrency.empty()) {
          check(o->n_gen > 0, "--concurrency needs -n > 0");
          check(o->depth == 0, "--n-depth does not combine with --concurrency");
          ComputeOptions co = o->compute.options();
          co.n_ctx = std::max(o->n_prompt, 1) + o->n_gen + 1;
          const std::shared_ptr<Session> session = Session::open(o->model, co);
          nlohmann::json rows = nlohmann::json::array();
          if (!o->json)
            std::printf("model %s, threads %d, mode %s, prompt %d, generate %d per request\n",
                        o->model.c_str(), o->compute.n_threads, o->compute.mode.c_str(),
                        o->n_prompt, o->n_gen);
          for (int c : o->concurrency) {
            std::vector<double> total, decode;
            for (int rep = 0; rep < o->reps; ++rep) {
              const ConcurrencyResult r =
                  bench_concurrency(session, c, std::max(o->n_prompt, 1), o->n_gen);
              total.push_back(r.total_tokens_per_s);
              decode.push_back(r.decode_tokens_per_s);
              if (!o->json && isatty(2))
                std::fprintf(stderr, "\rC=%d rep %d/%d", c, rep + 1, o->reps);
            }
            const Stats t = stats(total), d = stats(decode);
            if (o->json) {
              rows.push_back({{"concurrency", c},
                              {"tg_tokens_per_s", d.mean},
                              {"tg_sd", d.sd},
                              {"total_tokens_per_s", t.mean},
                              {"total_sd", t.sd}});
            } else {
              if (isatty(2)) std::fprintf(stderr, "\r");
              std::printf(
                  "C=%-4d generation %8.2f ± %.2f tokens/s aggregate (%.2f ± %.2f "
                  "with prefill)\n",
                  c, d.mean, d.sd, t.mean, t.sd);
            }
          }
          if (o->json)
            std::printf("%s\n", nlohmann::json({{"model", o->model},
                                                {"threads", o->compute.n_threads},
                                                {"mode", o->compute.mode},
                                                {"n_prompt", o->n_prompt},
                                                {"n_gen", o->n_gen},
                                                {"reps", o->reps},
                                                {"concurrency", rows}})
                                    .dump()
                                    .c_str());
          return 0;
        }
        const int depth = o->depth;
        // Past the trained context the numbers still measure speed (RoPE extends); the text
        // would not be meaningful, which a speed test does not read.
        const int n_ctx = depth + std::max(o->n_prompt, o->n_gen) + 1;
        // The depth is prefilled in chunks of -p tokens (512 with -p 0).
        const int chunk = o->n_prompt > 0 ? o->n_prompt : std::min(std::max(depth, 1), 512);
        ComputeOptions co = o->compute.options();
        co.n_ctx = n_ctx;
        co.n_batch = chunk;
        const std::shared_ptr<Session> session = Session::open(o->model, co);
        const Model* model = &session->model();
        const HParams& hp = session->hparams();
        const std::string kernels = session->kernels_label();
        check(!hp.recurrent() || !session->stage_plan(),
              "bench: a recurrent model's measurements restore its state at the depth in this "
              "process only, not on the other MPI ranks: run it without mpirun");
        const auto fwd_ptr = session->make_forward();
        Forward& fwd = *fwd_ptr;
        KvCache kv(hp, n_ctx, co.kv_type, session->local_layers());
        std::vector<float> logits(size_t(hp.n_vocab));
        std::vector<int32_t> tokens(size_t(depth + std::max(o->n_prompt, o->n_gen)));
        for (size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = int32_t((i * 7919 + 13) % size_t(hp.n_vocab));
        // The depth's positions, once: the tests below only write positions after them.
        for (int p0 = 0; p0 < depth; p0 += chunk) {
          if (!o->json && isatty(2)) std::fprintf(stderr, "\rdepth %d/%d", p0, depth);
          fwd.eval(&tokens[size_t(p0)], std::min(chunk, depth - p0), p0, kv, logits.data());
        }
        const int32_t* after = &tokens[size_t(depth)];
        // A recurrent state cannot rewind: each measurement starts from the depth's state.
        const std::vector<float> at_depth =
            hp.recurrent() ? kv.store().save_state(0) : std::vector<float>();
        auto back_to_depth = [&] {
          if (hp.recurrent()) kv.store().restore_state(0, at_depth);
        };
        // The roofline: the machine's streaming-read rate on the same threads, before and after
        // the tests (the best of both: VM memory rates drift between runs).
        StreamRead stream;
        auto measure_stream = [&] {
          if (o->n_gen == 0 || o->stream_mib == 0) return;
          const StreamRead s = session->measure_stream_read(
              std::max(size_t(o->stream_mib) << 20, size_t(o->compute.n_threads) << 16));
          if (s.gb_per_s > stream.gb_per_s) stream = s;
        };
        measure_stream();
        std::vector<double> pp, tg;
        for (int rep = 0; rep < o->reps; ++rep) {
          if (o->n_prompt > 0) {
            back_to_depth();
            const double t0 = now();
            fwd.eval(after, o->n_prompt, depth, kv, logits.data());
            pp.push_back(o->n_prompt / (now() - t0));
          }
          if (o->n_gen > 0) {
            back_to_depth();
            const double t0 = now();
            for (int i = 0; i < o->n_gen; ++i)
              fwd.eval(&after[size_t(i)], 1, depth + i, kv, logits.data());
            tg.push_back(o->n_gen / (now() - t0));
          }
          if (!o->json && isatty(2)) std::fprintf(stderr, "\rrep %d/%d", rep + 1, o->reps);
        }
        measure_stream();
        const Stats p = stats(pp), g = stats(tg);
        const double weight_gb_per_s = g.mean * weight_bytes_per_token(*model) / 1e9;
        const double file_gb = double(model->gguf().file_size()) / 1e9;
        if (o->json) {
          nlohmann::json j = {{"model", o->model},       {"model_bytes", model->gguf().file_size()},
                              {"n_prompt", o->n_prompt}, {"n_gen", o->n_gen},
                              {"n_depth", depth},        {"threads", o->compute.n_threads},
                              {"mode", o->compute.mode}, {"kernels", kernels},
                              {"reps", o->reps}};
          j["gpu_layers"] = o->compute.gpu_layers;
          // Matrices laid out at load for the kernels (kernels/weight_layout.h), 0 when none.
          j["blocks8_tensors"] = model->blocks8_tensors();
          j["rows16_tensors"] = model->repacked_tensors(tzero::WeightLayout::Rows16);
          if (fwd.device()) j["device"] = fwd.device()->describe();
          j["pp_tokens_per_s"] = o->n_prompt > 0 ? nlohmann::json(p.mean) : nlohmann::json();
          j["pp_sd"] = p.sd;
          j["tg_tokens_per_s"] = o->n_gen > 0 ? nlohmann::json(g.mean) : nlohmann::json();
          j["tg_sd"] = g.sd;
          j["tg_weight_gb_per_s"] =
              o->n_gen > 0 ? nlohmann::json(weight_gb_per_s) : nlohmann::json();
          if (stream.gb_per_s > 0) {
            j["stream_read_gb_per_s"] = stream.gb_per_s;
            j["stream_read_median_gb_per_s"] = stream.median_gb_per_s;
            j["stream_read_loads"] = stream.loads;
            j["tg_roofline_fraction"] = weight_gb_per_s / stream.gb_per_s;
          }
          std::printf("%s\n", j.dump().c_str());
        } else {
          if (isatty(2)) std::fprintf(stderr, "\r");
          std::printf("model %s (%.2f GB), threads %d, kernels %s, mode %s\n", o->model.c_str(),
                      file_gb, o->compute.n_threads, kernels.c_str(), o->compute.mode.c_str());
          const std::string at = depth ? " @ d" + std::to_string(depth) : "";
          if (o->n_prompt > 0)
            std::printf("pp%-5d%s %8.2f ± %.2f tokens/s\n", o->n_prompt, at.c_str(), p.mean, p.sd);
          if (o->n_gen > 0) {
            std::printf("tg%-5d%s %8.2f ± %.2f tokens/s (weights read at %.1f GB/s", o->n_gen,
                        at.c_str(), g.mean, g.sd, weight_gb_per_s);
            if (stream.gb_per_s > 0)
              std::printf(", %.0f%% of the %.1f GB/s streaming read",
                          100 * weight_gb_per_s / stream.gb_per_s, stream.gb_per_s);
            std::printf(")\n");
          }
        }
        return 0;
      }};
}

}  // namespace tzero::cli
