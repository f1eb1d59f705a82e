// tzero audit: the reproducibility contract checked on this machine, for one model.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "audit/audit.h"
#include "base/error.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "cli/output_files.h"

namespace tzero::cli {

Command add_audit(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "audit", "Run prompts under a matrix of configurations and prove they give the same bits");
  struct Opts {
    std::string model, prompts_file, report_dir, perturb;
    int n = 16, max_threads = 0, timing_runs = 3;
    bool force = false;
    ComputeFlags compute;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_option("-f,--file", o->prompts_file,
                  "Prompts, one per line (-: standard input; default: three built-in)");
  sub->add_option("-n,--n-predict", o->n, "Tokens to generate per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_option("--max-threads", o->max_threads, "Thread counts up to this (0: the cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_option("--timing-runs", o->timing_runs,
                  "Untraced runs per configuration timed for the throughput (at least; 0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  sub->add_option("--report", o->report_dir, "Write DIR/report.json and DIR/index.html");
  add_force_flag(sub, o->force);
  // The audit varies threads, kernels, the chunk and the mode itself; these hold for all.
  add_compute_flags(sub, o->compute, kOps | kKvType | kMmap);
  sub->add_option("--perturb", o->perturb, "Test hook: LAYER:OP:POS flipped in one configuration")
      ->group("");
  return {
      sub, [o] {
        if (!o->report_dir.empty())
          for (const char* name : {"/report.json", "/index.html"})
            check_output_free(o->report_dir + name, o->force, "--report DIR");
        AuditOptions opt;
        opt.n_predict = o->n;
        opt.max_threads = o->max_threads;
        opt.perturb = o->perturb;
        opt.timing_runs = o->timing_runs;
        opt.op_overrides = o->compute.op_overrides;
        opt.kv_type = o->compute.kv_type;
        opt.use_mmap = !o->compute.no_mmap;
        if (o->prompts_file.empty()) {
          opt.prompts = {"Once upon a time", "The little dog saw a big tree and",
                         "Lily and Ben went to the park"};
        } else {
          std::istringstream in(read_text_file(o->prompts_file));
          for (std::string line; std::getline(in, line);)
            if (!line.empty()) opt.prompts.push_back(line);
          if (opt.prompts.empty()) throw Error(o->prompts_file + ": no prompts in the file");
        }
        auto model = Model::load(
            o->model, o->compute.no_mmap ? MappedFile::Load::Read : MappedFile::Load::Auto);
        const Vocab vocab = Vocab::from_gguf(model->gguf());
        std::string tmpl = (std::filesystem::temp_directory_path() / "tzero-audit-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary directory");
        opt.work_dir = tmpl;
        struct Cleanup {
          std::string dir;
          ~Cleanup() { std::filesystem::remove_all(dir); }
        } cleanup{tmpl};
        std::fprintf(stderr, "auditing %s: %zu prompt(s), %d tokens each\n", o->model.c_str(),
                     opt.prompts.size(), o->n);
        const AuditReport r = run_audit(
            *model, vocab, o->model, opt, [](size_t done, size_t total, const std::string& line) {
              std::fprintf(stderr, "[%zu/%zu] %s\n", done, total, line.c_str());
            });
        std::printf("\n%-44s %-10s %s\n", "configuration", "prompts", "result");
        for (size_t c = 1; c < r.configs.size(); ++c) {
          int same = 0, n = 0;
          std::string first;
          for (const auto& out : r.outcomes)
            if (out.config == r.configs[c].name) {
              ++n;
              same += out.identical;
              if (!out.identical && first.empty() && !out.has_first)
                first = "(same tokens, logits digest differs)";
              if (!out.identical && (first.empty() || first[0] == '(') && out.has_first)
                first =
                    "first at position " + std::to_string(out.first_pos) + ", " +
                    (out.first_layer < 0 ? "" : "blk." + std::to_string(out.first_layer) + ".") +
                    out.first_op;
            }
          std::printf("%-44s %d/%d same  %s%s\n", r.configs[c].name.c_str(), same, n,
                      same == n
                          ? "identical"
                          : (r.configs[c].deterministic ? "DIVERGED "
                                                        : "diverged (expected in fast mode) "),
                      first.c_str());
        }
        std::printf("\nflip risk: smallest top-2 logit gap per prompt:");
        for (size_t p = 0; p < r.prompts.size(); ++p)
          std::printf(" %.4g (step %d)", r.min_gap[p], r.min_gap_step[p]);
        std::printf(
            "\nfast mode: %d of %d runs differ from the deterministic baseline (largest "
            "logit deviation %.3g); run to run, its repeated runs gave up to %d "
            "distinct results%s\n",
            r.fast_runs_diverged, r.fast_runs, r.fast_max_logit_deviation, r.fast_distinct_results,
            r.fast_distinct_results <= 1
                ? " (no run-to-run nondeterminism seen on this machine this time)"
                : "");
        std::printf("%s\n",
                    r.deterministic_failures == 0
                        ? "contract holds: every deterministic configuration is bit-identical"
                        : "CONTRACT BROKEN: a deterministic configuration diverged");
        if (!o->report_dir.empty()) {
          std::filesystem::create_directories(o->report_dir);
          std::ofstream(o->report_dir + "/report.json") << audit_json(r).dump(2) << "\n";
          std::ofstream(o->report_dir + "/index.html") << audit_html(r);
          std::printf("report: %s/index.html\n", o->report_dir.c_str());
        }
        return r.deterministic_failures == 0 ? 0 : 1;
      }};
}

}  // namespace tzero::cli
