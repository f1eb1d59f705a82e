// tzero lock: a prompt set run once, locally or against a server, and recorded in a lock file
// (lock/lock_file.h, docs/LOCK.md) that `tzero verify` checks later.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "base/excerpt.h"
#include "cli/commands.h"
#include "cli/lock_flags.h"
#include "cli/output_files.h"
#include "lock/lock_file.h"
#include "lock/prompt_set.h"
#include "lock/runner.h"

namespace tzero::cli {

namespace {
std::atomic<bool> g_lock_stop{false};
void on_lock_signal(int) {
  g_lock_stop = true;
}
}  // namespace

Command add_lock(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "lock", "Run a prompt set (JSONL) and record its answers and numerics in a lock file");
  struct Opts {
    LockFlags flags;
    std::string prompts, out;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("prompts", o->prompts,
                  "Prompt set: one OpenAI request body (JSON) a line, with \"prompt\" or "
                  "\"messages\" (docs/LOCK.md); -: standard input")
      ->required();
  sub->add_option("-o,--output", o->out, "Lock file to write")->required();
  add_force_flag(sub, o->force);
  add_lock_flags(sub, o->flags);
  return {
      sub, [o] {
        check_output_free(o->out, o->force, "-o FILE");
        const std::vector<lock::LockRequest> requests = lock::read_prompt_set(o->prompts);
        const bool remote = !o->flags.server.base_url.empty();
        if (remote && o->flags.model->count())
          throw Error("give -m (a local run) or --base-url (a server), not both");
        if (!remote && o->flags.engine.model.empty())
          throw Error("give -m MODEL (a local run) or --base-url URL (a server)");
        std::unique_ptr<lock::Runner> runner = remote ? lock::make_server_runner(o->flags.server)
                                                      : lock::make_local_runner(o->flags.engine);
        struct sigaction sa {};
        sa.sa_handler = on_lock_signal;
        sigaction(SIGINT, &sa, nullptr);
        sigaction(SIGTERM, &sa, nullptr);

        std::vector<std::optional<lock::LockResult>> results(requests.size());
        std::vector<size_t> order(requests.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        size_t done = 0;
        runner->run(
            requests, order,
            [&](size_t i, const lock::LockResult& r) {
              results[i] = r;
              const std::string id = excerpt(requests[i].id), why = excerpt(r.finish_reason);
              std::fprintf(stderr, "[%zu/%zu] %s: %zu characters, %s\n", ++done, requests.size(),
                           id.c_str(), r.text.size(), why.c_str());  // a server's text: escaped
            },
            g_lock_stop);
        if (g_lock_stop) {
          std::fprintf(stderr,
                       "tzero lock: interrupted after %zu of %zu requests; %s not "
                       "written\n",
                       done, requests.size(), o->out.c_str());
          return 130;
        }
        lock::LockFile lf;
        lf.kind = runner->kind();
        if (remote) {
          lf.base_url = o->flags.server.base_url;
          lf.model_name = o->flags.server.model_name;
        } else {
          lf.engine = o->flags.engine;
        }
        lf.fingerprint = runner->fingerprint();
        lf.manifest = runner->manifest();
        lf.environment = runner->environment();
        lf.prompt_set = o->prompts;
        for (size_t i = 0; i < requests.size(); ++i)
          lf.entries.push_back({requests[i], *results[i]});
        lock::write_lock_file(o->out, lf);
        const std::string fp = lf.fingerprint.empty() ? "none" : excerpt(lf.fingerprint);
        std::printf("locked %zu request(s) in %s (%s, fingerprint %s)\n", requests.size(),
                    o->out.c_str(), lf.kind.c_str(), fp.c_str());
        return 0;
      }};
}

}  // namespace tzero::cli
