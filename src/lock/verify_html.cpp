// tzero verify's HTML report: the summary (complete or interrupted), the manifest and
// environment entries that differ, and one row per request (identical, drifted with what
// differs and the first op that changed, or not verified). Every text from the lock or a server
// is escaped (base/html.h), and its control characters other than newline and tab are written
// as \xHH: the page never holds a raw escape sequence.
#include <cstdio>
#include <sstream>

#include "base/html.h"
#include "base/html_text.h"
#include "lock/verify.h"

namespace tzero::lock {

namespace {
std::string esc(const std::string& s) {
  std::string o;
  for (const char c : html_escape(s)) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\n' && c != '\t') || b == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      o += hex;
    } else {
      o += c;
    }
  }
  return o;
}

std::string diff_table(const char* title, const std::vector<EntryDiff>& ds) {
  std::ostringstream h;
  h << "<h2>" << title << "</h2>";
  if (ds.empty()) return h.str() + "<p class='ok'>none differ</p>";
  h << "<table><tr><th>entry</th><th>lock</th><th>now</th></tr>";
  for (const EntryDiff& d : ds)
    h << "<tr><td>" << esc(d.key) << "</td><td>" << esc(d.locked.dump()) << "</td><td>"
      << esc(d.now.dump()) << "</td></tr>";
  return h.str() + "</table>";
}
}  // namespace

std::string verify_html(const VerifyReport& r) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset='utf-8'><title>tzero verify</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;vertical-align:top}"
       ".ok{color:#1a7f37}.bad{color:#c62828;font-weight:bold}.skip{color:#777}"
       "pre{white-space:pre-wrap;margin:0;font-size:12px}"
    << kReportCss << "</style></head><body>";
  const bool pass = r.complete && r.drifted == 0;
  std::string headline = !r.complete ? "Incomplete: " + std::to_string(r.done) + " of " +
                                           std::to_string(r.verdicts.size()) + " requests verified"
                         : r.drifted ? std::to_string(r.drifted) + " of " +
                                           std::to_string(r.verdicts.size()) +
                                           " requests drifted from the lock"
                                     : "Every one of the " + std::to_string(r.verdicts.size()) +
                                           " requests gives the lock's answer, bit for bit";
  std::string detail = r.drifted ? "Each drifted request below shows where its text differs "
                                   "(marked) and, when found, the first op that changed."
                                 : "";
  if (!r.complete)
    detail = esc(r.interrupted.empty() ? "in progress" : r.interrupted) +
             (r.drifted ? "; " + std::to_string(r.drifted) + " drifted so far" : "");
  if (!r.manifest.empty())
    detail += std::string(detail.empty() ? "" : " ") +
              "The configuration differs from the lock's (below): a drift may follow from it.";
  h << verdict_banner(pass, headline, detail);
  h << "<h1>tzero verify: " << esc(r.lock_path) << "</h1>";
  h << "<p>" << r.done << " of " << r.verdicts.size() << " requests verified: "
    << "<span class='ok'>" << r.identical << " identical</span>, <span class='"
    << (r.drifted ? "bad" : "ok") << "'>" << r.drifted << " drifted</span>.";
  if (!r.complete)
    h << " <span class='bad'>Incomplete: "
      << esc(r.interrupted.empty() ? "in progress" : r.interrupted) << "</span>";
  h << "</p><p>lock: " << esc(r.lock_kind) << ", fingerprint " << esc(r.lock_fingerprint)
    << "; now: " << esc(r.now_kind) << ", fingerprint " << esc(r.now_fingerprint) << "</p>";
  h << diff_table("Manifest entries that differ", r.manifest);
  h << diff_table("Environment entries that differ", r.environment);
  h << "<h2>Requests</h2><table><tr><th>id</th><th>result</th><th>compared</th><th>details</th>"
       "</tr>";
  for (const RequestVerdict& v : r.verdicts) {
    h << "<tr><td>" << esc(v.id) << "<br><small>" << esc(v.where) << "</small></td>";
    if (!v.ran) {
      h << "<td class='skip'>not verified</td><td></td><td></td></tr>";
      continue;
    }
    std::string compared;
    for (const std::string& c : v.compared) compared += (compared.empty() ? "" : ", ") + c;
    h << "<td class='" << (v.identical ? "ok'>identical" : "bad'>drifted") << "</td><td>"
      << esc(compared) << "</td><td>";
    if (!v.identical) {
      std::string differs;
      for (const std::string& d : v.differs) differs += (differs.empty() ? "" : ", ") + d;
      h << "differs: " << esc(differs);
      if (v.first_token >= 0) h << "; first differing token #" << v.first_token;
      const Explanation& x = v.explanation;
      if (x.found)
        h << "<br>first op that changed: position " << x.pos << ", "
          << (x.layer < 0 ? std::string() : "layer " + std::to_string(x.layer) + ", ") << esc(x.op)
          << (x.description.empty() ? "" : " (" + esc(x.description) + ")");
      if (!x.note.empty()) h << "<br>" << esc(x.note);
      const TextStretch s = text_stretch(v.locked.text, v.now.text);
      h << "<br>lock text:<pre>"
        << html_marked(v.locked.text, s.prefix, v.locked.text.size() - s.suffix)
        << "</pre>now text:<pre>" << html_marked(v.now.text, s.prefix, v.now.text.size() - s.suffix)
        << "</pre>";
    }
    h << "</td></tr>";
  }
  h << "</table></body></html>\n";
  return h.str();
}

}  // namespace tzero::lock
