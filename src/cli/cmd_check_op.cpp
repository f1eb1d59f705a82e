// tzero check-op: prove a registered kernel bit-stable (include/tzero/check_op.h, tzero/ops.h).
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "base/error.h"
#include "cli/commands.h"
#include "tzero/check_op.h"
#include "tzero/ops.h"

namespace tzero::cli {

Command add_check_op(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "check-op", "Check registered kernels: identical to the reference, stable, or unstable");
  struct Opts {
    std::string op, name;
    bool list = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("--op", o->op, "Op to check (matmul.<type>, rmsnorm, swiglu); default: all");
  sub->add_option("--name", o->name, "Kernel name (default: every kernel of the op)");
  sub->add_flag("--list", o->list, "List the registered kernels");
  return {sub, [o] {
            int unstable = 0, checked = 0;
            for (const auto& r : tzero::registered_ops()) {
              if ((!o->op.empty() && r.op != o->op) || (!o->name.empty() && r.name != o->name))
                continue;
              if (o->list) {
                std::printf("%-14s %s\n", r.op.c_str(), r.name.c_str());
                continue;
              }
              const tzero::OpCheckReport rep = tzero::check_op(r.op, r.name);
              ++checked;
              unstable += rep.verdict == tzero::OpVerdict::Unstable;
              std::printf("%-14s %-18s %-44s %4zu cases", r.op.c_str(), r.name.c_str(),
                          tzero::verdict_name(rep.verdict), rep.cases);
              if (rep.verdict == tzero::OpVerdict::StableButDifferent)
                std::printf(", up to %llu ulp from the reference",
                            (unsigned long long)rep.max_ulp_vs_reference);
              if (!rep.detail.empty()) std::printf(": %s", rep.detail.c_str());
              std::printf("\n");
            }
            if (!o->list && checked == 0)
              throw Error("check-op: no registered kernel matches (see --list)");
            return unstable == 0 ? 0 : 1;
          }};
}

}  // namespace tzero::cli
