// tzero diff: compare two traces and name the first (position, layer, op) that drifted.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/error.h"
#include "base/excerpt.h"
#include "cli/commands.h"
#include "trace/diff.h"

namespace tzero::cli {

namespace {
std::string layer_name(int layer) {
  return layer < 0 ? "(outside layers)" : "blk." + std::to_string(layer);
}
}  // namespace

Command add_diff(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "diff",
      "Compare two traces (exit 0 identical: the same records, whole, with the same hashes; 1 "
      "different; 2 unusable, or a trace with no records)");
  struct Opts {
    std::string a, b;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("A", o->a, "First trace (tzero run --trace)")->required();
  sub->add_option("B", o->b, "Second trace")->required();
  sub->add_flag("--json", o->json, "Print one JSON object");
  return {
      sub, [o] {
        const TraceFile a = read_trace(o->a), b = read_trace(o->b);
        for (const TraceFile* t : {&a, &b})
          if (t->records.empty())
            throw Error(t->path + ": the trace has no records: nothing to compare");
        const TraceDiff d = diff_traces(a, b);
        if (o->json) {
          nlohmann::json j = {{"identical", d.identical()},
                              {"shared_identical", d.shared_identical()},
                              {"shared", d.shared},
                              {"only_a", d.only_a},
                              {"only_b", d.only_b},
                              {"differing", d.differing},
                              {"truncated_a", a.truncated},
                              {"truncated_b", b.truncated},
                              {"metadata_differs", d.metadata_differs}};
          if (d.has_first)
            j["first"] = {{"pos", d.first_pos},
                          {"layer", d.first_layer},
                          {"op", d.first_op},
                          {"what", std::string(op_description(d.first_op))}};
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
                                       {"max_ulp", v.max_ulp},
                                       {"nan", v.nan}});
          if (d.logits_compared) j["argmax_changed"] = d.argmax_changed;
          std::printf("%s\n", j.dump().c_str());
          return d.identical() ? 0 : 1;
        }
        // What the traces are of comes first: a different model, fingerprint or prompt
        // explains any difference below.
        for (const std::string& key : d.metadata_differs) {
          const auto ma = parse_json_bounded_or_discarded(a.metadata);
          const auto mb = parse_json_bounded_or_discarded(b.metadata);
          auto val = [&](const nlohmann::json& m) {  // a value from the file, cut to 200 bytes
            return m.contains(key) ? terminal_safe(excerpt(m[key].dump())) : std::string("(none)");
          };
          std::printf("note: the traces are of a different %s: A %s, B %s\n", key.c_str(),
                      val(ma).c_str(), val(mb).c_str());
        }
        std::printf("A: %s (%zu records%s)\nB: %s (%zu records%s)\n", terminal_safe(o->a).c_str(),
                    a.records.size(), a.truncated ? ", truncated" : "", terminal_safe(o->b).c_str(),
                    b.records.size(), b.truncated ? ", truncated" : "");
        if (d.only_a || d.only_b)
          std::printf(
              "not identical: the traces differ in what they recorded (only in A: %zu, only "
              "in B: %zu); compared where they share (position, layer, op)\n",
              d.only_a, d.only_b);
        if (d.identical()) {
          std::printf("identical: %zu shared records have the same hashes\n", d.shared);
          return 0;
        }
        if (d.shared_identical()) {
          std::printf("the %zu shared records have the same hashes%s\n", d.shared,
                      a.truncated || b.truncated ? "; a trace ends in a cut record" : "");
          return 1;
        }
        const std::string_view what = op_description(d.first_op);
        std::printf("first divergence: position %u, %s, op %s%s%s%s\n", d.first_pos,
                    layer_name(d.first_layer).c_str(), terminal_safe(d.first_op).c_str(),
                    what.empty() ? "" : " (", std::string(what).c_str(), what.empty() ? "" : ")");
        std::printf("%zu of %zu shared records differ\n\n%-18s %10s %10s  %s\n", d.differing,
                    d.shared, "layer", "differ", "compared", "ops that differ");
        for (const auto& r : d.layers) {
          std::string ops;
          for (const auto& op : r.ops) ops += (ops.empty() ? "" : ",") + terminal_safe(op);
          std::printf("%-18s %10zu %10zu  %s\n", layer_name(r.layer).c_str(), r.differing,
                      r.compared, ops.c_str());
        }
        if (!d.deviations.empty()) {
          std::printf("\n%-28s %6s %12s %12s %10s %6s\n", "tensor (with values)", "pos", "max abs",
                      "max rel", "max ulp", "nan");
          for (const auto& v : d.deviations)
            std::printf("%-28s %6u %12.4g %12.4g %10llu %6zu\n", terminal_safe(v.name).c_str(),
                        v.pos, v.max_abs, v.max_rel, (unsigned long long)v.max_ulp, v.nan);
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
