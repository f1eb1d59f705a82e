// tzero verify LOCK: a lock file's requests rerun (the lock's engine flags, each overridable, or
// a server with --base-url) and compared bit for bit (lock/verify.h, docs/LOCK.md).
// Exit status: 0 every request identical, 1 some drifted, 2 bad input or a verify cut short by
// an error (a server that stopped answering), 130 interrupted by SIGINT/SIGTERM; the report
// (--json, --html) keeps what was verified either way.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/excerpt.h"
#include "cli/commands.h"
#include "cli/lock_flags.h"
#include "cli/output_files.h"
#include "lock/lock_file.h"
#include "lock/runner.h"
#include "lock/verify.h"
#include "lock/verify_run.h"

namespace tzero::cli {

namespace {
std::atomic<bool> g_verify_stop{false};
void on_verify_signal(int) {
  g_verify_stop = true;
}
}  // namespace

Command add_verify(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "verify", "Rerun a lock file's requests and report each identical or drifted");
  struct Opts {
    LockFlags flags;
    std::string lock, html;
    bool json = false, force = false;
    size_t explain = 3, interrupt_after = 0;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("lock", o->lock, "Lock file written by tzero lock")->required();
  add_lock_flags(sub, o->flags);
  sub->add_flag("--json", o->json, "Print the report as JSON on stdout");
  sub->add_option("--html", o->html,
                  "Write an HTML report to FILE (rewritten after every request)");
  add_force_flag(sub, o->force);
  sub->add_option("--explain", o->explain,
                  "Drifted local requests explained by traced reruns of both configurations")
      ->capture_default_str();
  sub->add_option("--interrupt-after", o->interrupt_after,
                  "Test hook: raise SIGINT after N requests")
      ->group("");
  return {sub, [o] {
            check_output_free(o->html, o->force, "--html FILE");
            const lock::LockFile lf = lock::read_lock_file(o->lock);
            const bool remote = !o->flags.server.base_url.empty();
            if (remote && o->flags.model->count())
              throw Error("give -m (a local run) or --base-url (a server), not both");
            lock::EngineConfig now =
                merged_engine(o->flags, lf.kind == "local" ? &lf.engine : nullptr);
            if (!remote && now.model.empty())
              throw Error(o->lock +
                          ": the lock was made against a server: give -m MODEL (a "
                          "local run) or --base-url URL");
            std::unique_ptr<lock::Runner> runner =
                remote ? lock::make_server_runner(o->flags.server) : lock::make_local_runner(now);

            struct sigaction sa {};
            sa.sa_handler = on_verify_signal;
            sigaction(SIGINT, &sa, nullptr);
            sigaction(SIGTERM, &sa, nullptr);
            std::string tmpl =
                (std::filesystem::temp_directory_path() / "tzero-verify-XXXXXX").string();
            if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary directory");
            struct Cleanup {
              std::string dir;
              ~Cleanup() { std::filesystem::remove_all(dir); }
            } cleanup{tmpl};

            lock::VerifyOptions opt;
            if (!remote) opt.now_local = &now;
            opt.now_source =
                remote ? nlohmann::json{{"kind", "server"}, {"base_url", o->flags.server.base_url}}
                       : lock::config_json(now);
            opt.explain_max = o->explain;
            opt.work_dir = tmpl;
            // On a terminal the progress is one line rewritten in place (the results follow
            // once, on stdout); in a log, a line per request.
            const bool tty = isatty(2) != 0;
            opt.progress = [o, tty](size_t done, size_t total, const lock::RequestVerdict& v) {
              if (tty)
                std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done, total,
                             lock::verdict_line(v).c_str());
              else
                std::fprintf(stderr, "[%zu/%zu] %s\n", done, total, lock::verdict_line(v).c_str());
              if (o->interrupt_after > 0 && done == o->interrupt_after) raise(SIGINT);
            };
            opt.explaining = [tty](const lock::RequestVerdict& v) {
              std::fprintf(stderr, "%sexplaining %s: traced reruns of both configurations\n",
                           tty ? "\r\033[K" : "", excerpt(v.id).c_str());
            };
            if (!o->html.empty())
              opt.on_update = [o](const lock::VerifyReport& r) {
                lock::write_file_atomic(o->html, lock::verify_html(r));
              };
            const lock::VerifyReport r = lock::run_verify(lf, o->lock, *runner, g_verify_stop, opt);
            if (tty) std::fprintf(stderr, "\r\033[K");

            if (o->json) {
              std::printf("%s\n", lock::verify_json(r)
                                      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                                      .c_str());
            } else {
              // Keys from the lock file, values as JSON (control characters escaped by dump).
              for (const auto& d : r.manifest)
                std::printf("manifest differs: %s: lock %s, now %s\n", excerpt(d.key).c_str(),
                            d.locked.dump().c_str(), d.now.dump().c_str());
              for (const auto& d : r.environment)
                std::printf("environment differs: %s: lock %s, now %s\n", excerpt(d.key).c_str(),
                            d.locked.dump().c_str(), d.now.dump().c_str());
              for (const auto& v : r.verdicts) std::printf("%s\n", lock::verdict_line(v).c_str());
              std::printf("%zu of %zu verified: %zu identical, %zu drifted%s%s\n", r.done,
                          r.verdicts.size(), r.identical, r.drifted,
                          r.complete ? "" : "; INCOMPLETE: ", r.interrupted.c_str());
            }
            if (!r.interrupted.empty())
              std::fprintf(stderr, "tzero verify: %s (%zu of %zu verified)\n",
                           r.interrupted.c_str(), r.done, r.verdicts.size());
            if (g_verify_stop) return 130;
            if (!r.complete) return 2;
            return r.drifted == 0 ? 0 : 1;
          }};
}

}  // namespace tzero::cli
