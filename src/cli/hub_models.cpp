// cli/hub_models.h
#include "cli/hub_models.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

namespace tzero::cli {

hub::PullEvents stderr_pull_events(const std::string& what) {
  struct State {
    bool tty = isatty(2) != 0;
    int shown = -1;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now(), last;
  };
  auto st = std::make_shared<State>();
  hub::PullEvents ev;
  ev.note = [st, what](const std::string& line) {
    std::fprintf(stderr, "%spull: %s\n", st->tty && st->shown >= 0 ? "\r\033[K" : "", line.c_str());
    st->shown = -1;
  };
  ev.progress = [st, what](uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    const int pct = total > 0 ? int(100 * done / total) : -1;
    const bool end = total > 0 && done >= total;
    if (st->tty) {
      if (!end && now - st->last < std::chrono::milliseconds(200)) return;
    } else if (pct / 10 == st->shown / 10 && !end) {
      return;
    }
    st->last = now;
    st->shown = pct;
    const double secs = std::chrono::duration<double>(now - st->t0).count();
    char line[256];
    std::snprintf(line, sizeof line, "pull: %s %.1f / %.1f MiB (%d%%), %.1f MiB/s", what.c_str(),
                  double(done) / 1048576.0, double(total) / 1048576.0, std::max(pct, 0),
                  secs > 0 ? double(done) / 1048576.0 / secs : 0.0);
    std::fprintf(stderr, st->tty ? "\r\033[K%s%s" : "%s%s", line, st->tty && !end ? "" : "\n");
    if (end) st->shown = -1;
  };
  return ev;
}

void resolve_hub_models(CLI::App& sub) {
  if (sub.get_name() == "probe") return;
  for (const char* name : {"--model", "--draft-model"}) {
    CLI::Option* opt = sub.get_option_no_throw(name);
    if (!opt || opt->count() != 1) continue;
    const std::string value = opt->results()[0];
    const std::string path = hub::model_path_or_pull(value, stderr_pull_events(value));
    if (path == value) continue;
    opt->clear();
    opt->add_result(path);
    opt->run_callback();
  }
}

}  // namespace tzero::cli
