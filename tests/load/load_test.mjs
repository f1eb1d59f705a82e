// Load test of a running `tzero serve` (make load-test): N concurrent streaming clients for a
// bounded time, each sending completion after completion. Reports latency percentiles (whole
// request and time to first token), generated tokens per second, and statuses; checks that
// nothing but the intended 429/503 went wrong and that the KV cache is empty afterwards.
//
//   node tests/load/load_test.mjs --url http://127.0.0.1:8080 [--clients 64] [--seconds 25]
//        [--max-tokens 32] [--key K] [--report FILE.json]
// Exit status 0 when no unexpected error and no KV leak.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []),
);
const url = args.url ?? "http://127.0.0.1:8080";
const clients = Number(args.clients ?? 64);
const seconds = Number(args.seconds ?? 25);
const maxTokens = Number(args["max-tokens"] ?? 32);
const headers = { "Content-Type": "application/json" };
if (args.key) headers.Authorization = `Bearer ${args.key}`;

const words = ["Once upon a time", "The little dog", "In a far away land", "She said", "One day"];
const lat = [], ttft = [];
const status = {};
const errors = [];
let tokens = 0;
const t0 = performance.now();
const deadline = t0 + seconds * 1000;

async function one(id, n) {
  const body = {
    prompt: `${words[(id + n) % words.length]} (${id}.${n})`,
    max_tokens: maxTokens,
    temperature: n % 2 ? 0.8 : 0,
    seed: id * 1000 + n,
    stream: true,
    stream_options: { include_usage: true },
  };
  const start = performance.now();
  let res;
  try {
    res = await fetch(`${url}/v1/completions`, { method: "POST", headers, body: JSON.stringify(body) });
  } catch (e) {
    errors.push(`fetch: ${e.message}`);
    status.fetch_error = (status.fetch_error ?? 0) + 1;
    return;
  }
  status[res.status] = (status[res.status] ?? 0) + 1;
  if (res.status === 429 || res.status === 503) {
    await res.text();
    const wait = Number(res.headers.get("retry-after") ?? 1);
    await new Promise((r) => setTimeout(r, Math.min(wait, 1) * 200));
    return;
  }
  if (res.status !== 200) {
    errors.push(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    return;
  }
  const decoder = new TextDecoder();
  let buf = "", first = null, done = false, usage = null;
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ")) continue;
      const data = ev.slice(6);
      if (data === "[DONE]") { done = true; continue; }
      const j = JSON.parse(data);
      if (j.error) errors.push(`stream error: ${j.error.message}`);
      if (j.usage) usage = j.usage;
      if (first === null && j.choices?.[0]?.text) first = performance.now();
    }
  }
  if (!done) errors.push("stream ended without [DONE]");
  lat.push(performance.now() - start);
  if (first !== null) ttft.push(first - start);
  if (usage) tokens += usage.completion_tokens;
}

async function client(id) {
  for (let n = 0; performance.now() < deadline; n++) await one(id, n);
}

await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
const wall = (performance.now() - t0) / 1000;

const pct = (a, p) => {
  if (!a.length) return NaN;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
// Let the last cancellations (none expected) settle, then look for leaks.
await new Promise((r) => setTimeout(r, 300));
const health = await (await fetch(`${url}/health`)).json();
const leak = health.kv_blocks_used !== 0 || health.in_flight !== 0 || health.running !== 0;
const report = {
  clients, seconds_requested: seconds, wall_seconds: +wall.toFixed(2), max_tokens: maxTokens,
  completed: lat.length, statuses: status, generated_tokens: tokens,
  tokens_per_second: +(tokens / wall).toFixed(1),
  latency_ms: { p50: +pct(lat, 50).toFixed(0), p99: +pct(lat, 99).toFixed(0) },
  ttft_ms: { p50: +pct(ttft, 50).toFixed(0), p99: +pct(ttft, 99).toFixed(0) },
  errors: errors.length, first_errors: errors.slice(0, 5),
  after: { kv_blocks_used: health.kv_blocks_used, in_flight: health.in_flight, running: health.running },
};
console.log(JSON.stringify(report, null, 2));
if (args.report) (await import("node:fs")).writeFileSync(args.report, JSON.stringify(report, null, 2));
if (errors.length || leak) {
  console.error(errors.length ? `FAIL: ${errors.length} unexpected errors` : "FAIL: KV leak");
  process.exit(1);
}
console.error(`load test: ${lat.length} requests, p50 ${report.latency_ms.p50} ms, p99 ${report.latency_ms.p99} ms, ${report.tokens_per_second} tokens/s`);
