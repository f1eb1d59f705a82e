// tzero: a reproducible LLM inference engine. Exit status: 0 success, 1 a check failed,
// 2 bad input (unusable file, bad flag, prompt too long): one line on stderr says what.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/hub_models.h"
#include "cli/llama_flags.h"
#include "cli/usage_errors.h"
#include "distributed/pipeline.h"
#include "distributed/transport.h"

namespace tzero::cli {

std::string read_text_file(const std::string& path) {
  if (path == "-") {  // standard input, as probe's -f - reads it
    std::ostringstream text;
    text << std::cin.rdbuf();
    check(!std::cin.bad(), "-: cannot read standard input");
    return text.str();
  }
  MappedFile f(path);
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

double duration_seconds(const std::string& text, const std::string& flag) {
  double unit = 1;
  std::string number = text;
  if (!number.empty() && (number.back() == 's' || number.back() == 'm' || number.back() == 'h')) {
    unit = number.back() == 'h' ? 3600 : number.back() == 'm' ? 60 : 1;
    number.pop_back();
  }
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(v > 0) || !std::isfinite(v * unit))
    throw Error(flag + ": '" + text + "' is not a duration (N seconds, or Ns, Nm, Nh; above 0)");
  return v * unit;
}

std::optional<double> measured_rate(double items, double seconds) {
  if (items < 1 || !(seconds >= 1e-3)) return std::nullopt;
  return items / seconds;
}

std::string rate_text(std::optional<double> rate, const char* unit) {
  char buf[64];
  if (rate)
    std::snprintf(buf, sizeof buf, "%.1f %s", *rate, unit);
  else
    std::snprintf(buf, sizeof buf, "n/a %s", unit);
  return buf;
}

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

Mode mode_arg(const std::string& s) {
  const std::optional<Mode> m = parse_mode(s);
  if (!m) throw Error("--mode must be deterministic, fast or portable, not '" + s + "'");
  return *m;
}

}  // namespace tzero::cli

namespace {

// The last safety net of the one-line error contract: every message quotes outside text through
// excerpt() (200 bytes), so a longer message is a bug somewhere; it is still cut here, with
// control bytes escaped, rather than printed whole.
constexpr size_t kMaxErrorMessage = 2048;

std::string error_message(const char* what) {
  const std::string_view s(what);
  return s.size() > kMaxErrorMessage ? tzero::excerpt(s, kMaxErrorMessage) : std::string(s);
}

}  // namespace

// Rank 0 of an MPI job, at its end however it ends (a return from main or exit()): the other
// ranks stop, or after a fault the job ends (distributed/pipeline.h).
void stop_other_ranks() {
  tzero::dist::stop_ranks();
}

int main(int argc, char** argv) {
  // Under mpirun with the MPI build: ranks 1..N-1 run their layers of rank 0's models and
  // nothing else (they parse no flags: rank 0 sends them what they need).
  // MPI's own threads start in init: SIGINT and SIGTERM stay blocked in them, so that a signal
  // reaches this thread (serve's sigwait, run's interrupt handler), never kills the process
  // from a thread that does not expect it.
  sigset_t sigs, before;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, &before);
  try {
    tzero::dist::init(&argc, &argv);
  } catch (const tzero::Error& e) {
    std::fprintf(stderr, "tzero: error: MPI: %s\n", error_message(e.what()).c_str());
    return 2;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (tzero::dist::world().rank > 0) return tzero::dist::serve_stages();
  std::atexit(stop_other_ranks);  // (a world of one: MPI_Finalize when MPI started)
  CLI::App app{"tzero: LLM inference whose temperature-0 output is bit-for-bit reproducible",
               "tzero"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tzero ") + TZ_VERSION);
  const tzero::cli::Command commands[] = {
      tzero::cli::add_run(app),         tzero::cli::add_tokenize(app),  tzero::cli::add_info(app),
      tzero::cli::add_convert(app),     tzero::cli::add_gen_model(app), tzero::cli::add_bench(app),
      tzero::cli::add_diff(app),        tzero::cli::add_demo(app),      tzero::cli::add_audit(app),
      tzero::cli::add_fingerprint(app), tzero::cli::add_check_op(app),  tzero::cli::add_chat(app),
      tzero::cli::add_serve(app),       tzero::cli::add_probe(app),     tzero::cli::add_device(app),
      tzero::cli::add_embed(app),       tzero::cli::add_lock(app),      tzero::cli::add_verify(app),
      tzero::cli::add_pull(app),
  };
  tzero::cli::add_llama_flag_footers(app);
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  try {
    tzero::cli::rewrite_llama_flags(app, args);
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tzero: error: %s\n", tzero::cli::describe_parse_error(app, e).c_str());
    return 2;
  } catch (const tzero::Error& e) {
    std::fprintf(stderr, "tzero: error: %s\n", error_message(e.what()).c_str());
    return 2;
  }
  // TZERO_PARSE_ONLY=1 (tests: scripts/check_doc_commands.py): stop after a successful parse.
  if (const char* p = std::getenv("TZERO_PARSE_ONLY"); p && std::string(p) == "1") return 0;
  // Started by mpirun with several ranks: this build has no MPI, so each rank would run the
  // whole model on its own (N copies, N answers). Refused until the MPI build exists.
  if (std::string var; tzero::dist::launcher_ranks(&var) > 1 && !tzero::dist::built_with_mpi()) {
    std::fprintf(stderr,
                 "tzero: error: started as one of %d MPI ranks (%s), but this build has no MPI: "
                 "each rank would run the whole model alone. Build with MPI (make mpi: "
                 "build-mpi/tzero, docs/DISTRIBUTED.md) or run tzero without mpirun\n",
                 tzero::dist::launcher_ranks(), var.c_str());
    return 2;
  }
  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) {
        tzero::cli::resolve_hub_models(*c.sub);  // -m ORG/REPO:QUANT: pulled first
        return c.run();
      }
    return 2;
  } catch (const tzero::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tzero: error: %s\n", error_message(e.what()).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tzero: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    // Not an input error we anticipated: still one line and exit 2, never an abort.
    std::fflush(stdout);
    std::fprintf(stderr, "tzero: error: %s\n", error_message(e.what()).c_str());
    return 2;
  }
}
