// tzero: a reproducible LLM inference engine. Exit status: 0 success, 1 a check failed,
// 2 bad input (unusable file, bad flag, prompt too long): one line on stderr says what.
#include <cstdio>
#include <optional>
#include <thread>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"

namespace tzero::cli {

std::string read_text_file(const std::string& path) {
  MappedFile f(path);
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
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

int main(int argc, char** argv) {
  CLI::App app{"tzero: LLM inference whose temperature-0 output is bit-for-bit reproducible"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tzero ") + TZ_VERSION);
  const tzero::cli::Command commands[] = {
      tzero::cli::add_run(app),         tzero::cli::add_tokenize(app),  tzero::cli::add_info(app),
      tzero::cli::add_convert(app),     tzero::cli::add_gen_model(app), tzero::cli::add_bench(app),
      tzero::cli::add_diff(app),        tzero::cli::add_demo(app),      tzero::cli::add_audit(app),
      tzero::cli::add_fingerprint(app), tzero::cli::add_check_op(app),  tzero::cli::add_chat(app),
      tzero::cli::add_serve(app),       tzero::cli::add_probe(app),     tzero::cli::add_device(app),
      tzero::cli::add_embed(app),       tzero::cli::add_lock(app),      tzero::cli::add_verify(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) return c.run();
    return 2;
  } catch (const tzero::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tzero: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tzero: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    // Not an input error we anticipated: still one line and exit 2, never an abort.
    std::fflush(stdout);
    std::fprintf(stderr, "tzero: error: %s\n", e.what());
    return 2;
  }
}
