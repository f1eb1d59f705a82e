// tzero diff: compare two traces and name the first (position, layer, op) that drifted.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "trace/diff.h"

namespace tzero::cli {

namespace {
std::string layer_name(int layer) {
  return layer < 0 ? "(outside layers)" : "blk." + std::to_string(layer);
}
}  // namespace

Command add_diff(CLI::App& app) {
  auto* sub = app.add_subcommand("diff", "Compare two traces (exit 0 identical, 1 different)");
  struct Opts {
    std::string a, b;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("A", o->a, "First trace (tzero run --trace)")->required();
  sub->add_option("B", o->b, "Second trace")->required();
  sub->add_flag("--json", o->json, "Print one JSON object");
  return {sub, [o] {
            const TraceFile a = read_trace(o->a), b = read_trace(o->b);
            const TraceDiff d = diff_traces(a, b);
            if (o->json) {
              nlohmann::json j = {{"identical", d.identical()}, {"shared", d.shared},
                                  {"only_a", d.only_a},         {"only_b", d.only_b},
                                  {"differing", d.differing},   {"truncated_a", a.truncated},
                                  {"truncated_b", b.truncated}};
              if (d.has_first)
                j["first"] = {{"pos", d.first_pos}, {"layer", d.first_layer}, {"op", d.first_op}};
              for (const auto& r : d.layers)
                j["layers"].push_back({{"layer", r.layer},
                                       {"differing", r.differing},
                                       {"compared", r.compared},
                                       {"ops", r.ops}});
              for (const auto& v : d.deviations)
                j["deviations"].push_back({{"name", v.name},
                                           {"pos", v.pos},
                                           {"max_abs", v.max_abs},
                                           {"max_rel", v.max_rel},
                                           {"max_ulp", v.max_ulp}});
              if (d.logits_compared) j["argmax_changed"] = d.argmax_changed;
              std::printf("%s\n", j.dump().c_str());
              return d.identical() ? 0 : 1;
            }
            std::printf("A: %s (%zu records%s)\nB: %s (%zu records%s)\n", o->a.c_str(),
                        a.records.size(), a.truncated ? ", truncated" : "", o->b.c_str(),
                        b.records.size(), b.truncated ? ", truncated" : "");
            if (d.only_a || d.only_b)
              std::printf(
                  "note: the traces differ in what they recorded (only in A: %zu, only in "
                  "B: %zu); compared where they share (position, layer, op)\n",
                  d.only_a, d.only_b);
            if (d.identical()) {
              std::printf("identical: %zu shared records have the same hashes\n", d.shared);
              return 0;
            }
            std::printf("first divergence: position %u, %s, op %s\n", d.first_pos,
                        layer_name(d.first_layer).c_str(), d.first_op.c_str());
            std::printf("%zu of %zu shared records differ\n\n%-18s %10s %10s  %s\n", d.differing,
                        d.shared, "layer", "differ", "compared", "ops that differ");
            for (const auto& r : d.layers) {
              std::string ops;
              for (const auto& op : r.ops) ops += (ops.empty() ? "" : ",") + op;
              std::printf("%-18s %10zu %10zu  %s\n", layer_name(r.layer).c_str(), r.differing,
                          r.compared, ops.c_str());
            }
            if (!d.deviations.empty()) {
              std::printf("\n%-28s %6s %12s %12s %10s\n", "tensor (with values)", "pos", "max abs",
                          "max rel", "max ulp");
              for (const auto& v : d.deviations)
                std::printf("%-28s %6u %12.4g %12.4g %10llu\n", v.name.c_str(), v.pos, v.max_abs,
                            v.max_rel, (unsigned long long)v.max_ulp);
            }
            if (d.logits_compared)
              std::printf("\nargmax of the logits: %s\n",
                          d.argmax_changed
                              ? ("changed at position " + std::to_string(d.argmax_pos)).c_str()
                              : "unchanged wherever both traces hold the logits");
            return 1;
          }};
}

}  // namespace tzero::cli
