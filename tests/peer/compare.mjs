#!/usr/bin/env node
// Comparison half of `make test-peer` (driven by run_peer.sh).
//
//   node compare.mjs row --name NAME --n N --ours ours.json --logits L.bin --peer peer.json
//        [--peer-logits P.bin] [--threshold T] [--dtype D] [--expect-prompt 1,2,3] [--seconds-ours S]
//     prints one JSON row: the agreement of tzero's and llama.cpp's greedy tokens, and at the
//     first divergence both engines' logit gaps there.
//   node compare.mjs skip|error --name NAME --reason TEXT
//     prints a row for a case that did not run (skip) or failed to run (error).
//   node compare.mjs summary --rows rows.jsonl --report out.json [--max-diff D] [--env JSON]
//     prints the table, writes the JSON report, exits 0 when every row passes, 1 otherwise.
//
// Gaps are in logits (pre-softmax units). "ours" gaps come from tzero's --logits-out rows (row k
// holds the logits that token k was chosen from); "peer" gaps from the softmax probabilities
// llama.cpp's sampler reports (log p1 - log p2 = l1 - l2).
// "max logit diff" is max |(l_i - l_chosen)_tzero - (l_i - l_chosen)_llama.cpp| over the agreed
// steps: how far apart the two engines' numbers are, which is what can flip a near-tie.
import fs from "node:fs";
import process from "node:process";

function opts(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--")) throw new Error(`bad argument ${argv[i]}`);
    o[argv[i].slice(2)] = argv[i + 1];
  }
  return o;
}

const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8").trim().split("\n").pop());
const round = (x, d = 4) => (x == null || !Number.isFinite(x) ? x : Number(x.toFixed(d)));

function top2(row) {
  let a = -1, b = -1;
  for (let i = 0; i < row.length; i++) {
    if (a < 0 || row[i] > row[a]) { b = a; a = i; }
    else if (b < 0 || row[i] > row[b]) b = i;
  }
  return { top: a, second: b, gap: row[a] - row[b] };
}

function makeRow(o) {
  const ours = readJson(o.ours);
  const peer = readJson(o.peer);
  const n = Number(o.n);
  const row = { name: o.name, n, prompt_tokens: ours.prompt_tokens, llama_cpp: peer.llama_cpp };
  if (peer.error) {
    const why = (peer.log ?? []).filter((l) => l.startsWith("error")).slice(0, 2).join(" | ");
    return { ...row, verdict: "ERROR", reason: `llama.cpp: ${peer.error}${why ? ` (${why})` : ""}`, peer_log: peer.log };
  }
  if (o["expect-prompt"]) {
    const want = o["expect-prompt"].split(",").map(Number);
    if (JSON.stringify(want) !== JSON.stringify(ours.prompt_tokens))
      return { ...row, verdict: "ERROR",
               reason: `tzero run evaluated ${JSON.stringify(ours.prompt_tokens)} but tokenize gave ${JSON.stringify(want)}` };
  }
  if (JSON.stringify(peer.prompt_tokens) !== JSON.stringify(ours.prompt_tokens))
    return { ...row, verdict: "ERROR", reason: "the two engines were given different prompts" };
  const T = ours.tokens, P = peer.tokens;
  // tzero's logits rows: one per generated token.
  const buf = fs.readFileSync(o.logits);
  const floats = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  if (T.length === 0 || floats.length % T.length !== 0)
    return { ...row, verdict: "ERROR", reason: `logits file has ${floats.length} floats for ${T.length} tokens` };
  const nVocab = floats.length / T.length;
  const logitsRow = (k) => floats.subarray(k * nVocab, (k + 1) * nVocab);

  let k = 0;
  while (k < T.length && k < P.length && T[k] === P[k]) k++;
  const full = k === T.length && k === P.length;
  Object.assign(row, {
    n_vocab: nVocab,
    ours_tokens: T, peer_tokens: P,
    ours_stop: ours.stop_reason, peer_stop: peer.stop_reason,
    agree: k, compared: Math.max(T.length, P.length),
  });

  // llama.cpp's logits relative to its top token (peer_greedy.mjs --logits-out), when given.
  let peerRow = null;
  if (o["peer-logits"]) {
    const pb = fs.readFileSync(o["peer-logits"]);
    const pf = new Float32Array(pb.buffer, pb.byteOffset, pb.byteLength / 4);
    if (P.length && pf.length === P.length * nVocab) peerRow = (s) => pf.subarray(s * nVocab, (s + 1) * nVocab);
    else row.peer_logits_note = `peer logits file has ${pf.length} floats, expected ${P.length} x ${nVocab}`;
  }
  // Over the agreed prefix: the closest call each engine made, and the largest difference between
  // the two engines' logits (each taken relative to the chosen token; tokens within 50 logits of
  // it, where llama.cpp's float probabilities still give its logits to ~1e-6).
  let minOurs = Infinity, minPeer = Infinity, maxDiff = 0, diffSteps = 0;
  for (let s = 0; s < k; s++) {
    const L = logitsRow(s);
    const t = top2(L);
    minOurs = Math.min(minOurs, t.gap);
    if (peer.gaps?.[s] != null) minPeer = Math.min(minPeer, peer.gaps[s]);
    if (peerRow) {
      const R = peerRow(s), top = L[T[s]];
      for (let i = 0; i < nVocab; i++) {
        if (!(R[i] > -50)) continue;
        const dd = Math.abs(L[i] - top - R[i]);
        if (dd > maxDiff) maxDiff = dd;
      }
      diffSteps++;
    }
  }
  row.min_gap_ours = Number.isFinite(minOurs) ? round(minOurs) : null;
  row.min_gap_peer = Number.isFinite(minPeer) ? round(minPeer) : null;
  row.max_logit_diff = diffSteps ? round(maxDiff, 6) : null;
  row.logit_diff_steps = diffSteps;
  if (peer.argmax_mismatches?.length) row.peer_argmax_mismatches = peer.argmax_mismatches;

  if (full) {
    row.verdict = "agree";
    return row;
  }
  const d = { step: k, ours_token: T[k] ?? null, peer_token: P[k] ?? null };
  if (k < T.length && k < P.length) {
    const L = logitsRow(k);
    const t = top2(L);
    d.ours_gap = round(L[T[k]] - L[P[k]], 6); // our logit(our token) - logit(peer's token)
    d.ours_top2_gap = round(t.gap, 6);
    d.peer_top2_gap = peer.gaps?.[k] != null ? round(peer.gaps[k], 6) : null; // peer's top1 - top2
    d.peer_runner_up = peer.second?.[k] ?? null;
    // When llama.cpp's runner-up is our token, its top-2 gap is exactly its gap between the two.
    d.peer_gap = peerRow && Number.isFinite(peerRow(k)[T[k]])
      ? round(peerRow(k)[P[k]] - peerRow(k)[T[k]], 6)
      : d.peer_runner_up === T[k] ? d.peer_top2_gap : null;
  } else {
    d.reason = `one engine stopped early (ours: ${ours.stop_reason} after ${T.length}, llama.cpp: ${peer.stop_reason} after ${P.length})`;
  }
  row.divergence = d;
  return row;
}

function finalVerdict(r, maxDiff) {
  if (maxDiff != null && r.max_logit_diff != null && r.max_logit_diff > maxDiff) {
    r.reason = `logits differ by ${r.max_logit_diff} > PEER_MAX_DIFF ${maxDiff}`;
    return "FAIL";
  }
  if (r.verdict !== "diverged") return r.verdict;
  return r.divergence?.ours_gap != null && r.divergence.ours_gap < r.threshold ? "near-tie" : "FAIL";
}

function pad(s, n, right = false) {
  s = String(s);
  return right ? s.padStart(n) : s.padEnd(n);
}

function summary(o) {
  const maxDiff = o["max-diff"] ? Number(o["max-diff"]) : null;
  const rows = fs.existsSync(o.rows)
    ? fs.readFileSync(o.rows, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
    : [];
  for (const r of rows) r.verdict = finalVerdict(r, maxDiff);
  const cols = ["file", "agree", "verdict", "gap thr", "first divergence", "min gap (ours/peer)", "max logit diff"];
  const lines = rows.map((r) => {
    let div = "";
    if (r.divergence) {
      const d = r.divergence;
      div = d.ours_gap != null
        ? `step ${d.step}: ${d.ours_token} vs ${d.peer_token}, ours ${d.ours_gap.toFixed(4)}` +
          (d.peer_gap != null ? `, peer ${d.peer_gap.toFixed(4)}` : d.peer_top2_gap != null ? `, peer top2 ${d.peer_top2_gap.toFixed(4)}` : "")
        : d.reason;
    } else if (r.reason) div = r.reason;
    const agree = r.compared != null ? `${r.agree}/${r.compared}` : "-";
    const gaps = r.min_gap_ours != null ? `${r.min_gap_ours.toFixed(3)}/${r.min_gap_peer != null ? r.min_gap_peer.toFixed(3) : "-"}` : "-";
    const drift = r.max_logit_diff != null ? r.max_logit_diff.toExponential(1) : "-";
    return [r.name, agree, r.verdict, r.threshold ?? "-", div, gaps, drift];
  });
  const w = cols.map((c, i) => Math.max(c.length, ...lines.map((l) => String(l[i]).length)));
  const fmt = (l) => l.map((c, i) => pad(c, w[i], i === 1)).join("  ").trimEnd();
  console.log("\n" + fmt(cols));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const l of lines) console.log(fmt(l));
  const count = (v) => rows.filter((r) => r.verdict === v).length;
  const bad = rows.filter((r) => r.verdict === "FAIL" || r.verdict === "ERROR");
  console.log(`\n${rows.length} cases: ${count("agree")} agree, ${count("near-tie")} near-tie ` +
              `(our gap < the threshold), ${count("FAIL")} FAIL, ${count("ERROR")} ERROR, ${count("skip")} skipped`);
  const report = {
    date: new Date().toISOString(),
    max_logit_diff_limit: maxDiff,
    env: { ...JSON.parse(o.env || "{}"), llama_cpp: rows.find((r) => r.llama_cpp)?.llama_cpp },
    cases: rows,
    ok: bad.length === 0,
  };
  fs.writeFileSync(o.report, JSON.stringify(report, null, 1) + "\n");
  console.log(`report: ${o.report}`);
  process.exitCode = bad.length === 0 ? 0 : 1;
}

const [cmd, ...rest] = process.argv.slice(2);
const o = opts(rest);
if (cmd === "row") {
  let r;
  try {
    r = makeRow(o);
    if (!r.verdict) r.verdict = "diverged";
  } catch (e) {
    r = { name: o.name, verdict: "ERROR", reason: String(e.message ?? e) };
  }
  if (o.file) r.file = o.file;
  if (o.dtype) r.dtype = o.dtype;
  if (o.threshold) r.threshold = Number(o.threshold);
  if (o["seconds-ours"]) r.seconds_ours = Number(o["seconds-ours"]);
  if (o["seconds-peer"]) r.seconds_peer = Number(o["seconds-peer"]);
  process.stdout.write(JSON.stringify(r) + "\n");
  // One human line per case on stderr (the summary applies the threshold).
  const d = r.divergence;
  const what = r.verdict === "agree" ? "agree"
    : r.verdict === "diverged" && d?.ours_gap != null
      ? `diverge at step ${d.step} (ours ${d.ours_token}, llama.cpp ${d.peer_token}; our gap ${d.ours_gap}` +
        `, peer ${d.peer_gap ?? (d.peer_top2_gap != null ? "top2 " + d.peer_top2_gap : "-")})`
      : `${r.verdict}: ${d?.reason ?? r.reason ?? ""}`;
  process.stderr.write(`  -> ${r.agree ?? 0}/${r.compared ?? r.n ?? "?"} ${what}\n`);
} else if (cmd === "skip" || cmd === "error") {
  process.stdout.write(JSON.stringify({ name: o.name, verdict: cmd === "skip" ? "skip" : "ERROR", reason: o.reason }) + "\n");
} else if (cmd === "summary") {
  summary(o);
} else {
  console.error("usage: compare.mjs row|skip|error|summary ...");
  process.exitCode = 2;
}
