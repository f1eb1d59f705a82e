// tzero probe: measures how reproducible an OpenAI-compatible server is (docs/PROBE.md).
// Exit status: 0 every run that answered matched bit for bit, 1 a divergence was found, 2 bad
// input, the server could not be used, or nothing could be compared (one line on stderr says
// why; the report is written first in the last case).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/output_files.h"
#include "probe/probe.h"
#include "probe/report.h"

namespace tzero::cli {

Command add_probe(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "probe", "Measure how reproducible an OpenAI-compatible inference server is");
  struct Opts {
    probe::ProbeOptions p;
    std::string prompts_file, report_dir;
    bool json = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--base-url", o->p.base_url,
                  "The server, e.g. http://127.0.0.1:8080 or http://host:8000/v1")
      ->required();
  sub->add_option("--model", o->p.model, "The model name sent in each request")->required();
  sub->add_option(
      "-f,--file", o->prompts_file,
      "Prompts: one per line, or a JSON array of strings; - for stdin (default: four built-in)");
  sub->add_option("--runs", o->p.runs, "Runs per prompt, sampling and mode")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub->add_option("--concurrency", o->p.concurrency,
                  "Concurrent filler requests around each loaded run (0: no loaded runs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_option("--max-tokens", o->p.max_tokens, "Tokens to generate per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 32768));
  sub->add_flag("--chat", o->p.chat, "Use /v1/chat/completions (default: /v1/completions)");
  sub->add_option("--timeout", o->p.timeout_s, "Seconds to wait for the server, per request")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 86400.0));
  sub->add_option("--api-key", o->p.api_key, "Sent as Authorization: Bearer KEY");
  sub->add_option("--temperature", o->p.sampled_temperature,
                  "Temperature of the seeded runs besides the greedy ones (0: greedy only)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0));
  sub->add_option("--seed", o->p.seed, "Seed of the seeded runs")->capture_default_str();
  sub->add_option("--top-logprobs", o->p.top_logprobs,
                  "Alternatives per token to compare (-1: do not ask for logprobs)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 20));
  sub->add_option("--report", o->report_dir, "Write DIR/report.json and DIR/index.html");
  add_force_flag(sub, o->force);
  sub->add_flag("--json", o->json, "Print one JSON object on stdout instead of the table");
  return {sub, [o] {
            probe::ProbeOptions opt = o->p;
            if (o->prompts_file.empty()) {
              opt.prompts = probe::default_prompts();
            } else {  // a pipe, or "-" for stdin, will do as well as a file
              std::ifstream f;
              if (o->prompts_file != "-") {
                f.open(o->prompts_file, std::ios::binary);
                if (!f) throw Error(o->prompts_file + ": cannot open the file");
              }
              std::ostringstream text;
              text << (o->prompts_file == "-" ? std::cin.rdbuf() : f.rdbuf());
              opt.prompts = probe::parse_prompts(text.str(), o->prompts_file);
            }
            if (!o->report_dir.empty()) {  // fail now, not after the whole probe has run
              for (const char* name : {"/report.json", "/index.html"})
                check_output_free(o->report_dir + name, o->force, "--report DIR");
              std::error_code ec;
              std::filesystem::create_directories(o->report_dir, ec);
              std::ofstream test(o->report_dir + "/report.json");
              if (ec || !test)
                throw Error("--report " + o->report_dir + ": cannot write there" +
                            (ec ? ": " + ec.message() : std::string()));
            }
            const probe::ProbeReport r =
                probe::run_probe(opt, [](size_t done, size_t total, const std::string& what) {
                  std::fprintf(stderr, "[%zu/%zu] %s\n", done, total, what.c_str());
                });
            // Token texts may hold broken UTF-8 (a character split across tokens): replaced.
            const std::string json = probe::probe_json(r).dump(
                2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
            if (o->json)
              std::printf("%s\n", json.c_str());
            else
              std::printf("\n%s", probe::probe_table(r).c_str());
            if (!o->report_dir.empty()) {
              std::ofstream(o->report_dir + "/report.json") << json << "\n";
              std::ofstream(o->report_dir + "/index.html") << probe::probe_html(r);
              std::fprintf(o->json ? stderr : stdout, "report: %s/index.html\n",
                           o->report_dir.c_str());
            }
            if (!r.comparable) throw Error(probe::nothing_compared_reason(r));  // exit 2
            return r.identical ? 0 : 1;
          }};
}

}  // namespace tzero::cli
