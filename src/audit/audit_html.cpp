// The audit's HTML report: a summary, the flip risk, a table of every configuration and prompt,
// the heatmap of first divergences by layer and position and the throughput per configuration
// (audit/audit_charts.cpp), all inline: no scripts, no external assets.
#include <sstream>

#include "audit/audit.h"
#include "audit/audit_charts.h"
#include "base/html.h"
#include "base/html_text.h"

namespace tzero {

std::string audit_html(const AuditReport& r) {
  using audit_charts::short_number;
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>tzero audit</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}.ok{color:#1a7f37}"
       ".bad{color:#c62828;font-weight:bold}.fast{color:#b26a00}"
       ".na{color:#777;border-bottom:1px dotted #777;cursor:help}"
    << kReportCss << "</style></head><body>";
  size_t det_runs = 0;
  for (const auto& o : r.outcomes)
    for (const auto& c : r.configs)
      if (c.name == o.config && c.deterministic) ++det_runs;
  h << (r.deterministic_failures
            ? verdict_banner(false,
                             "Contract broken: " + std::to_string(r.deterministic_failures) +
                                 " deterministic run(s) diverged from the baseline",
                             "Each is marked in the table below with the first op that changed.")
            : verdict_banner(true,
                             "Contract holds: every deterministic configuration is "
                             "bit-identical",
                             std::to_string(det_runs) +
                                 " deterministic runs (threads, kernels, chunks, batches, "
                                 "drafts) equal the baseline. Fast mode's differences below are "
                                 "expected: it has no contract."));
  h << "<h1>tzero audit</h1><p>Model: <code>" << html_escape(r.model) << "</code>. "
    << r.prompts.size() << " prompt(s), " << r.configs.size()
    << " configurations, each compared with the baseline "
    << "by tracing every named intermediate of every position.</p>";
  h << "<p class='" << (r.deterministic_failures ? "bad" : "ok") << "'>"
    << (r.deterministic_failures
            ? std::to_string(r.deterministic_failures) + " deterministic run(s) diverged."
            : "Every deterministic configuration is bit-identical to the baseline.")
    << "</p><p><span class='expected'>expected</span> Fast mode (no contract, for comparison): "
    << r.fast_runs_diverged << " of " << r.fast_runs
    << " runs differ from the deterministic baseline (largest logit deviation "
    << short_number(r.fast_max_logit_deviation) << ", over the " << r.fast_deviation_runs
    << " traced runs: a batched run gives a digest of its logits, not their values); its "
       "repeated runs gave up to "
    << r.fast_distinct_results << " distinct results"
    << (r.fast_distinct_results <= 1 ? " (no run-to-run nondeterminism seen this time: with one "
                                       "core, or with luck, the arrival order did not change)"
                                     : "")
    << ".</p>";
  h << "<h2>Flip risk</h2><table><tr><th>prompt</th><th>smallest top-2 logit gap</th><th>at "
       "step</th></tr>";
  for (size_t p = 0; p < r.prompts.size(); ++p)
    h << "<tr><td>" << html_escape(r.prompts[p].substr(0, 60)) << "</td><td>"
      << short_number(r.min_gap[p]) << "</td><td>" << r.min_gap_step[p] << "</td></tr>";
  h << "</table><p>A rounding deviation larger than the smallest gap could change the text; "
       "compare with the fast mode deviation above.</p>";
  h << "<h2>Configurations</h2><table><tr><th>configuration</th><th>prompt</th><th>result</th>"
       "<th>tokens</th><th>max logit deviation</th></tr>";
  bool any_na = false;
  for (const auto& o : r.outcomes) {
    const bool base = o.config == r.configs[0].name;
    bool fast = false;  // fast mode: a difference is expected, shown as such
    for (const auto& c : r.configs)
      if (c.name == o.config) fast = !c.deterministic;
    std::string res = base ? "baseline" : o.identical ? "identical" : "diverged";
    if (!o.identical && o.has_first)
      res += " at pos " + std::to_string(o.first_pos) + ", " +
             (o.first_layer < 0 ? "" : "blk." + std::to_string(o.first_layer) + ".") + o.first_op;
    if (!o.identical && !o.has_first) res += ": same tokens, logits digest differs";
    if (fast && !o.identical) res = "expected: " + res;
    h << "<tr><td>" << html_escape(o.config) << "</td><td>" << o.prompt + 1 << "</td><td class='"
      << (o.identical ? "ok"
          : fast      ? "expected"
                      : "bad")
      << "'>" << html_escape(res) << "</td><td>" << (o.tokens_equal ? "same" : "changed")
      << "</td><td>";
    if (o.na.deviation.empty()) {
      h << short_number(o.max_logit_deviation);
    } else {
      any_na = true;
      h << "<span class='na' title='" << html_escape(o.na.deviation) << "'>n/a*</span>";
    }
    h << "</td></tr>";
  }
  h << "</table>";
  if (any_na)
    h << "<p>* Not measured: a batched run goes through the engine, which reports a digest of "
         "the logits, not their values. Equal digests mean equal bits (deviation 0); a different "
         "digest says only that they differ.</p>";
  h << "<h2>First divergences by layer and position</h2>";
  const std::string heat = audit_charts::divergence_heatmap(r);
  h << (heat.empty() ? "<p>No configuration diverged: nothing to map.</p>"
                     : heat +
                           "<p>Each cell counts the runs (configuration and prompt) whose first "
                           "differing record is at that layer and position; hover for them. "
                           "A batched run that sampled another token is placed outside the "
                           "layers at that token's position.</p>");
  h << "<h2>Decode throughput per configuration (tokens/s)</h2>" << audit_charts::throughput(r)
    << "</body></html>\n";
  return h.str();
}

}  // namespace tzero
