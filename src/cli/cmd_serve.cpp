// tzero serve: the OpenAI-compatible HTTP server (server/http_server.h, docs/SERVER.md).
// Prints "listening on http://HOST:PORT" to stderr once it accepts connections; SIGTERM or
// SIGINT stops it gracefully (requests in flight get --grace seconds, then are cancelled) and
// it exits 0. A second signal cancels what is still running at once.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "chat/chat_template.h"
#include "chat/template_choice.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "lock/canary.h"
#include "lock/environment.h"
#include "runtime/session.h"
#include "server/http_server.h"
#include "tzero/engine.h"

namespace tzero::cli {

Command add_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (docs/SERVER.md)");
  struct Opts {
    tzero::EngineOptions engine;
    server::ServerOptions server;
    double grace_s = 10.0;
    ComputeFlags compute;
    size_t max_body_kib = 1024;
    size_t max_header_kib = 32;
    std::string pooling = "model";
    std::string canary, canary_interval = "10m";
    bool canary_degrades_health = false;
  };
  auto o = std::make_shared<Opts>();
  o->engine.max_seqs = 8;
  o->engine.max_queue = 64;
  sub->add_option("-m,--model", o->engine.model_path, "GGUF model file")->required();
  // -b: the engine's pass budget is --batch-tokens.
  add_compute_flags(sub, o->compute, kAllCompute & ~kBatch);
  sub->add_option("--host", o->server.host, "Address to bind (default: loopback only)")
      ->capture_default_str();
  sub->add_option("--port", o->server.port, "TCP port (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--api-key", o->server.api_key,
                  "Require 'Authorization: Bearer KEY' on every route but /health (default: the "
                  "environment's TZERO_API_KEY, which other local users cannot read from argv)")
      ->envname("TZERO_API_KEY");
  sub->add_option("--parallel", o->engine.max_seqs, "Sequences decoded together (batch slots)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--kv-tokens", o->engine.kv_tokens,
                  "KV pool capacity in positions (0: parallel x ctx, capped at 1 GiB)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  sub->add_option("--block-size", o->engine.block_size, "KV block size in positions")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_option("--batch-tokens", o->engine.max_batch_tokens, "Token budget of one forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--spec-type", o->engine.spec_type,
                  "Speculative decoding for every request, the same bits as without: "
                  "ngram-simple (prompt lookup: no draft model), draft (--draft-model)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "ngram-simple", "draft"}));
  sub->add_option("--draft-model", o->engine.draft_model,
                  "Draft model for speculative decoding (same vocabulary; implies --spec-type "
                  "draft): one KV cache of the context per running request");
  sub->add_option("--draft-max", o->engine.draft_max, "Most tokens drafted per request and step")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  sub->add_option("--draft-min", o->engine.draft_min, "Fewer drafted tokens are not verified")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_option("--max-queue", o->engine.max_queue,
                  "Waiting requests beyond the running ones; more get 429")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--pooling", o->pooling,
                  "Pooling of /v1/embeddings: model (the file's pooling_type, else mean), mean, "
                  "cls or last")
      ->capture_default_str()
      ->check(CLI::IsMember({"model", "mean", "cls", "last"}));
  sub->add_option("--chat-template", o->server.chat_template,
                  "Chat template: a named format (llama2, llama3, chatml, ...) or a Jinja file, "
                  "instead of the model's (a model without one uses chatml)");
  sub->add_option("--model-name", o->server.model_name,
                  "Model id reported by the API (default: the model's general.name)");
  sub->add_option("--max-body-kib", o->max_body_kib, "Largest request body in KiB (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--max-response-bytes", o->server.max_response_bytes,
                  "Largest non-streamed answer in bytes (a 413 error naming this limit beyond; "
                  "streams are not limited in total)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1) << 10, size_t(1) << 40));
  sub->add_option("--http-threads", o->server.http_threads,
                  "Threads running request handlers (0: min(4, cores)); connections are "
                  "served by one event loop and need no thread each")
      ->check(CLI::Range(0, 256));
  sub->add_option("--max-connections", o->server.max_connections,
                  "Open connections; one more is answered 503 and closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--max-header-kib", o->max_header_kib,
                  "Largest request line + headers in KiB (431 beyond; at most 100 fields)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--request-timeout", o->server.request_timeout_s,
                  "Seconds a request (headers and body) has to arrive, from the connection's "
                  "accept or, on a kept-alive connection, from the request's first byte")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_option("--keep-alive", o->server.keep_alive_s,
                  "Seconds an idle connection waits for its next request")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  sub->add_option("--write-timeout", o->server.write_timeout_s,
                  "Seconds one write to a client may take; a client that does not read is cut")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_option("--allowed-host", o->server.allowed_hosts,
                  "Without --api-key: a Host name accepted besides IP addresses and localhost "
                  "(repeatable; '*': any)");
  sub->add_flag_callback(
      "--no-access-log", [o] { o->server.access_log = false; },
      "Do not print the access log (one line per request on stderr: method, path, status, "
      "prompt and completion tokens, milliseconds)");
  sub->add_option("--grace", o->grace_s,
                  "Seconds in-flight requests get to finish on SIGTERM/SIGINT, then cancelled")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  auto* canary_flag = sub->add_option(
      "--canary", o->canary,
      "A lock file (tzero lock) whose requests the server reruns every --canary-interval at low "
      "priority, reporting drift in the log and /metrics");
  sub->add_option("--canary-interval", o->canary_interval,
                  "Time between canary runs: seconds, or N followed by s, m or h")
      ->capture_default_str()
      ->needs(canary_flag);
  sub->add_flag("--canary-degrades-health", o->canary_degrades_health,
                "While the last canary run drifted, /health answers 503 with status \"degraded\"")
      ->needs(canary_flag);
  o->server.http_threads = 0;
  return {
      sub, [o] {
        // Signals go to sigwait below only: block them before any thread exists.
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
        signal(SIGPIPE, SIG_IGN);

        o->engine.pooling = *parse_pooling(o->pooling);
        if (!o->engine.draft_model.empty() && o->engine.spec_type == "none")
          o->engine.spec_type = "draft";
        o->server.max_body_bytes = o->max_body_kib * 1024;
        o->server.max_header_bytes = o->max_header_kib * 1024;
        if (o->server.http_threads == 0)
          o->server.http_threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
        // An unknown name or unreadable file fails here, before the model loads (exit 2).
        if (!o->server.chat_template.empty()) choose_chat_template("", o->server.chat_template);
        const std::shared_ptr<Session> session =
            Session::open(o->engine.model_path, o->compute.options());
        const std::string kernels_label = session->kernels_label();
        // A failed step (a pipeline rank that died or hangs: docs/DISTRIBUTED.md) has cancelled
        // every request (503) and refuses new ones; the server then stops as on a signal and
        // exits non-zero.
        std::mutex failure_mu;
        std::string failure;
        o->engine.on_failure = [&](const std::string& why) {
          {
            std::lock_guard<std::mutex> lock(failure_mu);
            failure = why;
          }
          kill(getpid(), SIGTERM);
        };
        tzero::Engine engine(session, o->engine);
        // The template is parsed now, so one tzero cannot run (a hostile one nested past the
        // limits included) is a load error, not a failure at the first chat request. The rule
        // (chat/template_choice.h): --chat-template, the model's, else chatml.
        const ChatTemplateChoice choice =
            choose_chat_template(engine.info().chat_template, o->server.chat_template);
        try {
          const ChatTemplate check_template(choice.source);
        } catch (const Error& e) {
          const std::string where = o->server.chat_template.empty()
                                        ? o->engine.model_path + ": " + choice.label
                                        : o->server.chat_template;
          throw Error(where + ": " + e.what() + " (name a format with --chat-template NAME)");
        }
        std::unique_ptr<lock::Canary> canary;
        if (!o->canary.empty()) {
          lock::CanaryOptions co;
          co.lock_path = o->canary;
          co.interval_s = duration_seconds(o->canary_interval, "--canary-interval");
          if (co.interval_s > 7 * 86400.0)
            throw Error("--canary-interval: '" + o->canary_interval +
                        "' is over a week: a canary that rarely runs notices drift late");
          co.now.model = o->engine.model_path;
          co.now.ctx = o->compute.n_ctx;
          co.now.kernels = o->compute.kernels;
          co.now.mode = o->compute.mode;
          co.now.kv_type = o->compute.kv_type;
          co.now.threads = o->compute.n_threads;
          co.now.chat_template = o->server.chat_template;
          co.now.op_overrides = o->compute.op_overrides;
          canary = std::make_unique<lock::Canary>(engine, co, [](const std::string& line) {
            std::fprintf(stderr, "tzero serve: %s\n", line.c_str());
          });
          lock::Canary* c = canary.get();
          const bool degrades = o->canary_degrades_health;
          o->server.health_extra = [c, degrades](nlohmann::json& j) {
            j["canary"] = c->health_json();
            return !(degrades && c->drifted());
          };
          o->server.metrics_extra = [c](std::string& out) { c->render_metrics(out); };
          o->server.canary_page = [c] { return c->last_report_html(); };
        }
        {  // what the console shows of the engine and the machine
          server::ConsoleInfo& ci = o->server.console;
          ci.version = std::string("tzero ") + TZ_VERSION;
          ci.kernels = kernels_label;
          ci.mode = o->compute.mode;
          ci.kv_type = o->compute.kv_type;
          ci.threads = o->compute.n_threads;
          ci.n_ctx = engine.info().n_ctx;
          ci.slots = o->engine.max_seqs;
          const nlohmann::json env = lock::environment_json(kernels_label);
          ci.machine = env.value("/cpu/model"_json_pointer, std::string()) + ", " +
                       env.value("os", std::string()) + ", built with " +
                       env.value("compiler", std::string());
        }
        server::HttpServer srv(engine, o->server);
        const int port = srv.start();
        if (choice.fallback)
          std::fprintf(stderr, "tzero serve: %s\n",
                       chat_template_fallback_note(o->engine.model_path).c_str());
        std::fprintf(stderr, "tzero serve: model %s, fingerprint %s, context %d, %d slots\n",
                     srv.model_name().c_str(), engine.info().fingerprint.c_str(),
                     engine.info().n_ctx, o->engine.max_seqs);
        if (engine.info().state_bytes_per_seq > 0)
          std::fprintf(
              stderr,
              "tzero serve: recurrent state %.1f MiB per sequence (%.1f MiB for %d slots and %d "
              "snapshots); prefix cache %s\n",
              double(engine.info().state_bytes_per_seq) / 1048576.0,
              double(engine.info().state_bytes_per_seq) *
                  (o->engine.max_seqs + engine.info().state_snapshots) / 1048576.0,
              o->engine.max_seqs, engine.info().state_snapshots,
              !engine.info().prefix_cache               ? "off"
              : engine.info().prefix_cache_note.empty() ? "on"
                                                        : engine.info().prefix_cache_note.c_str());
        const std::string& h = o->server.host;  // an IPv6 address goes in brackets in a URL
        const std::string url_host = h.find(':') != std::string::npos ? "[" + h + "]" : h;
        std::fprintf(stderr, "listening on http://%s:%d\n", url_host.c_str(), port);
        std::fflush(stderr);
        if (canary) canary->start();

        int sig = 0;
        sigwait(&sigs, &sig);
        {
          std::lock_guard<std::mutex> lock(failure_mu);
          if (failure.empty())
            std::fprintf(stderr, "tzero serve: signal %d, stopping (grace %.1f s)\n", sig,
                         o->grace_s);
          else
            std::fprintf(stderr, "tzero serve: the engine failed, stopping\n");
        }
        // A second signal cancels what is still running.
        std::atomic<bool> stopped{false};
        std::thread second([&] {
          timespec ts{0, 100 * 1000 * 1000};
          while (!stopped) {
            if (sigtimedwait(&sigs, nullptr, &ts) > 0) srv.cancel_all();
          }
        });
        if (canary) canary->stop();
        srv.stop(o->grace_s);
        stopped = true;
        second.join();
        engine.stop();
        {
          std::lock_guard<std::mutex> lock(failure_mu);
          if (!failure.empty()) {
            std::fprintf(stderr, "tzero serve: error: the engine failed: %s\n", failure.c_str());
            return 3;
          }
        }
        std::fprintf(stderr, "tzero serve: stopped\n");
        return 0;
      }};
}

}  // namespace tzero::cli
