// The probe page's sections about answers: the reference answer of every prompt and sampling,
// the diverging runs with the place where their bits differ marked (the differing stretch of
// text highlighted in both texts; for texts that are equal, the token positions whose logprobs
// or alternatives differ, with both numbers as the server wrote them and as double bits), and
// the requests that failed (status and message), fillers grouped.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "base/html.h"
#include "base/html_text.h"
#include "probe/report_html_parts.h"

namespace tzero::probe::html {

namespace {

constexpr size_t kMaxRunsShown = 20;        // diverging runs per prompt and sampling
constexpr size_t kMaxDifferencesShown = 5;  // token positions per run

std::string quoted(const std::string& s) {
  return "<code>'" + visible(s) + "'</code>";
}

std::string number(const std::string& text, const std::optional<double>& v) {
  return "<code>" + html_escape(text) + "</code>" +
         (v ? " <small>(" + double_bits(*v) + ")</small>" : std::string());
}

// Where a run's tokens differ from the reference's (logprobs compared).
std::string token_cell(const Completion& ref, const Completion& run) {
  const TokenDifferences d = token_differences(ref, run, kMaxDifferencesShown);
  std::ostringstream o;
  if (d.positions == 0 && d.ref_tokens == d.other_tokens) return "";
  o << "<ul class='diffs'>";
  for (const auto& x : d.first) {
    o << "<li>token " << x.position << " " << quoted(x.ref_token);
    if (x.field == "token") {
      o << " &rarr; " << quoted(x.other_token) << ": the sampled token changed";
    } else if (x.ref_value) {
      o << ", " << html_escape(x.field) << ": reference " << number(x.ref_text, x.ref_value)
        << ", this run " << number(x.other_text, x.other_value);
    } else {
      o << ", " << html_escape(x.field) << ": reference " << quoted(x.ref_text) << ", this run "
        << quoted(x.other_text);
    }
    o << "</li>";
  }
  if (d.positions > d.first.size())
    o << "<li>... " << d.positions - d.first.size() << " more differing position(s)</li>";
  if (d.ref_tokens != d.other_tokens)
    o << "<li>" << d.other_tokens << " tokens in this run, " << d.ref_tokens
      << " in the reference</li>";
  o << "</ul>";
  return o.str();
}

std::string divergence_cell(const ProbeReport& r, const Completion& ref, const Completion& run) {
  std::ostringstream o;
  if (ref.text != run.text) {
    const TextStretch s = text_stretch(ref.text, run.text);
    o << "<div>text differs from byte " << s.prefix << " (highlighted):</div><div>reference: "
      << html_marked(ref.text, s.prefix, ref.text.size() - s.suffix)
      << "</div><div>this run: " << html_marked(run.text, s.prefix, run.text.size() - s.suffix)
      << "</div>";
  } else {
    o << "<div>text identical (<code class='text'>" << visible(short_text(run.text, 80))
      << "</code>); the bits differ:</div>";
  }
  if (r.logprobs) o << token_cell(ref, run);
  return o.str();
}

std::string request_error_text(const RequestError& e) {
  return (e.status ? "HTTP " + std::to_string(e.status) : std::string("no HTTP error status")) +
         "</td><td><code>" + visible(e.message) + "</code>";
}

}  // namespace

std::string reference_answers(const ProbeReport& r) {
  std::ostringstream h;
  h << "<h2>Reference answers</h2><p>The answer every other run of a prompt and sampling is "
       "compared with: its first solo run (or, when that failed, its first run that "
       "answered).</p><table><tr><th>#</th><th>sampling</th><th>run</th><th>tokens</th>"
       "<th>finish</th><th>text</th></tr>";
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(sampling_label(s)) << "</td>";
      if (s.reference >= s.runs.size()) {
        h << "<td colspan='4' class='bad'>no run answered</td></tr>";
        continue;
      }
      const RunRecord& ref = s.runs[s.reference];
      h << "<td>" << html_escape(ref.mode) << " " << ref.index + 1 << "</td><td>"
        << (ref.out.has_logprobs ? std::to_string(ref.out.tokens.size()) : std::string("-"))
        << "</td><td>" << visible(ref.out.finish_reason) << "</td><td><code class='text'>"
        << visible(ref.out.text) << "</code></td></tr>";
    }
  h << "</table>";
  return h.str();
}

std::string diverging_runs(const ProbeReport& r) {
  bool any = false;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) any = any || !s.summary.identical;
  if (!any) return "";
  std::ostringstream h;
  h << "<h2>Diverging runs</h2><p>Each run that differs from its reference, and where: the "
       "differing stretch of text is highlighted in both texts; "
    << (r.logprobs ? "the token positions whose text, logprob or alternatives differ are listed "
                     "with both values as the server wrote them and their double bits."
                   : "the server gave no logprobs, so only the texts are compared.")
    << "</p><table><tr><th>#</th><th>sampling</th><th>mode</th><th>run</th><th>first "
       "divergence</th><th>where the bits differ</th></tr>";
  for (size_t i = 0; i < r.prompts.size(); ++i)
    for (const auto& s : r.prompts[i].series) {
      if (s.summary.identical || s.reference >= s.runs.size()) continue;
      const Completion& ref = s.runs[s.reference].out;
      size_t shown = 0, diverged = 0;
      for (const auto& run : s.runs) {
        if (run.failed() || run.vs_reference.identical) continue;
        if (++diverged > kMaxRunsShown) continue;
        ++shown;
        h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(sampling_label(s)) << "</td><td>"
          << html_escape(run.mode) << "</td><td>" << run.index + 1 << "</td><td>"
          << (run.vs_reference.first_divergence
                  ? (r.logprobs ? "token " : "byte ") +
                        std::to_string(*run.vs_reference.first_divergence)
                  : std::string("-"))
          << "</td><td>" << divergence_cell(r, ref, run.out) << "</td></tr>";
      }
      if (diverged > shown)
        h << "<tr><td>" << i + 1 << "</td><td colspan='5'>... and " << diverged - shown
          << " more diverging run(s) of this prompt and sampling (report.json has them)</td></tr>";
    }
  h << "</table>";
  return h.str();
}

std::string failed_requests(const ProbeReport& r) {
  std::ostringstream h;
  bool any = false;
  for (const auto& p : r.prompts)
    for (const auto& s : p.series) any = any || s.failed_runs > 0;
  if (any) {
    h << "<h2>Failed requests</h2><p>" << r.failed_requests
      << " probed request(s) failed. Each is recorded here and left out of the comparison; the "
         "probe went on with the others.</p><table><tr><th>#</th><th>sampling</th><th>mode</th>"
         "<th>run</th><th>status</th><th>message</th></tr>";
    for (size_t i = 0; i < r.prompts.size(); ++i)
      for (const auto& s : r.prompts[i].series)
        for (const auto& run : s.runs)
          if (run.error)
            h << "<tr><td>" << i + 1 << "</td><td>" << html_escape(sampling_label(s)) << "</td><td>"
              << html_escape(run.mode) << "</td><td>" << run.index + 1 << "</td><td class='bad'>"
              << request_error_text(*run.error) << "</td></tr>";
    h << "</table>";
  }
  if (r.filler_errors > 0) {
    h << "<h2>Failed filler requests</h2><p>" << r.filler_errors << " of " << r.filler_requests
      << " filler request(s) failed (fillers only load the server; their answers are not "
         "compared):</p><table><tr><th>count</th><th>status</th><th>message</th></tr>";
    for (const auto& g : group_errors(r.filler_failures))
      h << "<tr><td>" << g.count << "</td><td>" << request_error_text({g.status, g.message})
        << "</td></tr>";
    h << "</table>";
  }
  return h.str();
}

}  // namespace tzero::probe::html
