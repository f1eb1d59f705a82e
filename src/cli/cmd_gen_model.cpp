// tzero gen-model: write a random-weight model with a real architecture's shapes.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/output_files.h"
#include "convert/gen_model.h"

namespace tzero::cli {

Command add_gen_model(CLI::App& app) {
  auto* sub =
      app.add_subcommand("gen-model", "Write a random-weight model (deterministic in the seed)");
  struct Opts {
    std::string preset = "tiny", dtype = "f32", out;
    uint64_t seed = 1;
    int layers = 0;  // 0: the preset's
    bool list = false, force = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--preset", o->preset, "Shape preset (see --list)")->capture_default_str();
  sub->add_option("--dtype", o->dtype,
                  "Weight type, or a llama-quantize mix (q4_k_m, ...): " + weight_format_names())
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Random seed")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() || v[0] == '-' ? "'" + v + "' is not a number from 0 to 2^64-1"
                                            : std::string();
          },
          "UINT64"));
  sub->add_option(
      "-o,--output", o->out,
      "Output GGUF file (default: PRESET-DTYPE.gguf here, -NLl after PRESET with --layers, -seedN "
      "added for a seed other "
      "than 1)");
  sub->add_option("--layers", o->layers,
                  "Layers instead of the preset's (a deeper model of the same shape: e.g. to "
                  "split over MPI ranks)")
      ->check(CLI::Range(1, 512));
  add_force_flag(sub, o->force);
  sub->add_flag("--list", o->list, "List the presets");
  return {
      sub, [o] {
        if (o->list) {
          // name, arch, then the shape; the first column is the name (scripts read it).
          for (const auto& p : model_presets()) {
            const std::string experts =
                p.n_expert > 0 ? std::to_string(p.n_expert) + "/" + std::to_string(p.n_expert_used)
                               : "-";
            std::printf(
                "%-18s %-8s %7.3fB params  vocab %6d embd %4d ff %4d layers %2d heads "
                "%2d/%-2d experts %-6s %s\n",
                p.name.c_str(), p.arch.c_str(), preset_parameters(p) / 1e9, p.n_vocab, p.n_embd,
                p.n_ff, p.n_layer, p.n_head, p.n_head_kv, experts.c_str(), p.description.c_str());
          }
          return 0;
        }
        const ModelPreset* found = find_preset(o->preset);
        if (!found) throw Error("gen-model: unknown preset '" + o->preset + "' (see --list)");
        ModelPreset deeper = *found;
        const ModelPreset* p = found;
        if (o->layers > 0) {
          if (!found->layer_pattern.empty())
            throw Error("gen-model: --layers: " + found->name +
                        " lists each layer's kind; it has no other depth");
          if (o->layers <= found->n_dense_lead)
            throw Error("gen-model: --layers: " + found->name + " leads with " +
                        std::to_string(found->n_dense_lead) +
                        " dense layers; give more layers than that");
          deeper.n_layer = o->layers;
          p = &deeper;
        }
        const auto t = parse_weight_format(o->dtype);
        if (!t)
          throw Error("gen-model: unsupported dtype '" + o->dtype + "' (" + weight_format_names() +
                      ")");
        if (o->out.empty()) {
          o->out = p->name + (o->layers > 0 ? "-" + std::to_string(o->layers) + "l" : "") + "-" +
                   t->name + (o->seed == 1 ? "" : "-seed" + std::to_string(o->seed)) + ".gguf";
        }
        check_output_free(o->out, o->force, "-o FILE");
        const auto t0 = std::chrono::steady_clock::now();
        // Progress on a terminal (the large presets take minutes), one line rewritten.
        const bool tty = isatty(2);
        int shown = -1;
        auto progress = [&](uint64_t done, uint64_t total) {
          const int pct = total ? int(100 * done / total) : 100;
          if (!tty || pct == shown) return;
          shown = pct;
          std::fprintf(stderr, "\rgen-model: %3d%% (%.2f of %.2f GB)", pct, double(done) / 1e9,
                       double(total) / 1e9);
          if (done == total) std::fprintf(stderr, "\r\033[K");
        };
        for (const auto& note : generate_model(*p, *t, o->seed, o->out, progress))
          std::fprintf(stderr, "note: %s\n", note.c_str());
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "wrote %s (%s, %s, seed %llu) in %.1f s\n", o->out.c_str(),
                     p->name.c_str(), o->dtype.c_str(), (unsigned long long)o->seed, s);
        return 0;
      }};
}

}  // namespace tzero::cli
