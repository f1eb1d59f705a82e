// server/console.h
#include "server/console.h"

#include "base/html.h"
#include "base/html_text.h"

namespace tzero::server {

namespace {

// Polls /health and /metrics; computes rates from the counters' deltas; fills the cells by id.
const char* kScript = R"(<script>
'use strict';
const metric = (text, name) => {
  const m = text.match(new RegExp('^' + name + '(?:\\{[^}]*\\})? ([0-9.eE+-]+)$', 'gm'));
  return m ? m.reduce((s, line) => s + parseFloat(line.split(' ').pop()), 0) : null;
};
const set = (id, v) => { const e = document.getElementById(id); if (e) e.textContent = v; };
let last = null;
async function poll() {
  try {
    const [h, m] = await Promise.all([fetch('health', {cache: 'no-store'}),
                                      fetch('metrics', {cache: 'no-store'})]);
    const health = await h.json(), text = await m.text(), now = Date.now() / 1000;
    const c = {req: metric(text, 'tzero_engine_requests_finished_total'),
               gen: metric(text, 'tzero_generated_tokens_total'),
               prompt: metric(text, 'tzero_prompt_tokens_total')};
    if (last) {
      const dt = now - last.t;
      set('req_rate', ((c.req - last.req) / dt).toFixed(2));
      set('tok_rate', ((c.gen - last.gen) / dt).toFixed(1));
      set('prompt_rate', ((c.prompt - last.prompt) / dt).toFixed(1));
    }
    last = Object.assign({t: now}, c);
    set('status', health.status);
    set('running', health.running + ' of ' + document.body.dataset.slots);
    set('queue', health.queue_depth);
    set('in_flight', health.in_flight);
    const kv = health.kv_blocks_total ? 100 * health.kv_blocks_used / health.kv_blocks_total : 0;
    set('kv', health.kv_blocks_used + ' of ' + health.kv_blocks_total + ' blocks (' +
        kv.toFixed(0) + '%), ' + health.kv_blocks_cached + ' cached');
    document.getElementById('kv_bar').style.width = kv.toFixed(1) + '%';
    set('finished', health.requests_finished);
    const v = document.getElementById('verdict');
    if (health.canary) {
      const k = health.canary;
      set('canary', k.state + ': ' + k.runs + ' run(s), ' + k.drift_total + ' drifted request(s)' +
          (k.last_success ? ', last clean run ' + new Date(k.last_success * 1000).toLocaleString()
                          : ''));
      if (k.state === 'drifted') {
        v.className = 'verdict fail';
        v.querySelector('b').textContent = 'DRIFT';
        v.querySelector('span').textContent =
            'Drifting: the canary\'s last run differs from its lock';
      }
    }
    set('updated', new Date().toLocaleTimeString());
  } catch (e) {
    set('updated', 'unreachable (' + e + ')');
  }
}
poll();
setInterval(poll, 2000);
</script>)";

std::string row(const std::string& name, const std::string& value_html) {
  return "<tr><th>" + name + "</th><td>" + value_html + "</td></tr>";
}

std::string cell(const char* id, const char* initial = "&hellip;") {
  return std::string("<span id='") + id + "'>" + initial + "</span>";
}

}  // namespace

std::string console_html(const ConsoleInfo& c) {
  std::string h =
      "<!doctype html><html><head><meta charset='utf-8'><title>tzero serve: " +
      html_escape(c.model) +
      "</title><style>body{font-family:sans-serif;margin:2em;max-width:1000px}"
      "table{border-collapse:collapse;margin-bottom:1em}th,td{border:1px solid #ccc;padding:4px "
      "10px;font-size:14px;text-align:left;vertical-align:top}th{background:#f5f5f5;width:14em}"
      ".bar{width:320px;height:10px;background:#eee;border-radius:5px;overflow:hidden;margin-top:"
      "4px}.bar div{height:10px;background:#3a7bd5;width:0}code{font-size:13px;word-break:break-"
      "all}small{color:#666}" +
      std::string(kReportCss) + "</style></head><body data-slots='" + std::to_string(c.slots) +
      "'>";
  h += std::string("<div id='verdict' class='verdict ") + (c.drifting ? "fail" : "pass") +
       "' role='status'><b>" + (c.drifting ? "DRIFT" : "OK") + "</b><span>" +
       (c.drifting ? std::string("Drifting: the canary's last run differs from its lock")
                   : "Serving in " + html_escape(c.mode) + " mode under fingerprint " +
                         html_escape(c.fingerprint)) +
       "</span><div>" +
       (c.canary ? "The drift canary reruns its lock (below)."
                 : "No drift canary: start the server with --canary LOCK.json to watch for "
                   "drift.") +
       "</div></div>";
  h += "<h1>tzero serve</h1><h2>What runs</h2><table>";
  h += row("model", "<code>" + html_escape(c.model) + "</code>");
  h += row("fingerprint", "<code>" + html_escape(c.fingerprint) + "</code>");
  h += row("engine", html_escape(c.version) + ", mode " + html_escape(c.mode) + ", KV " +
                         html_escape(c.kv_type) + ", kernels " + html_escape(c.kernels) + ", " +
                         std::to_string(c.threads) + " threads, context " +
                         std::to_string(c.n_ctx) + ", " + std::to_string(c.slots) + " slots");
  h += row("machine", html_escape(c.machine));
  h += "</table><h2>Now <small>(every 2 s; updated " + cell("updated") + ")</small></h2><table>";
  h += row("status", cell("status"));
  h += row("requests/s finished", cell("req_rate", "&ndash;"));
  h += row("tokens/s generated", cell("tok_rate", "&ndash;") + " <small>(prompt: " +
                                     cell("prompt_rate", "&ndash;") + ")</small>");
  h += row("batch", cell("running") + " sequences running, " + cell("queue") + " waiting, " +
                        cell("in_flight") + " HTTP requests in flight");
  h += row("KV cache", cell("kv") + "<div class='bar'><div id='kv_bar'></div></div>");
  h += row("requests finished", cell("finished"));
  h += row("drift canary",
           c.canary ? cell("canary") + " <a href='canary'>its last report</a>"
                    : std::string("off (<code>tzero serve --canary LOCK.json</code>; a lock from "
                                  "<code>tzero lock</code>)"));
  h += "</table><h2>Check it</h2><p>Probe this server (or another) for reproducibility, "
       "from any machine:</p><pre><code>tzero probe --base-url http://THIS_HOST:PORT --model " +
       html_escape(c.model) + (c.api_key ? " --api-key KEY" : "") +
       " --report probe-report</code></pre><p>Record its answers now and verify them later: "
       "<code>tzero lock prompts.jsonl --base-url http://THIS_HOST:PORT -o lock.json</code>, "
       "then <code>tzero verify lock.json --base-url ... --html report.html</code>. "
       "Metrics for Prometheus: <a href='metrics'>/metrics</a>; health: <a "
       "href='health'>/health</a>.</p>";
  h += std::string(kScript) + "</body></html>\n";
  return h;
}

}  // namespace tzero::server
