#!/usr/bin/env node
// llama.cpp's speed on a GGUF file, measured like `tzero bench`: pp = one evaluation of p prompt
// tokens, tg = n single-token evaluations, both from an empty context or after d tokens (-d,
// evaluated untimed before each test), each repeated and averaged. llama.cpp comes from the npm
// package node-llama-cpp (pinned 3.21.1, installed under tests/peer by tests/peer/run_peer.sh or
// `npm install` there), CPU only.
//
//   node bench/llama_cpp_bench.mjs -m F.gguf [-p 128] [-n 64] [-d 0] [-t 2] [-r 3]
// Prints one JSON object: pp_tokens_per_s, tg_tokens_per_s, their standard deviations, and the
// configuration.
import process from "node:process";

const lib = new URL("../tests/peer/node_modules/node-llama-cpp/dist/index.js", import.meta.url);
const { getLlama, LlamaLogLevel } = await import(lib.href);

const a = { p: 128, n: 64, d: 0, t: 2, r: 3 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const k = argv[i], v = argv[++i];
  if (k === "-m") a.m = v;
  else if (k === "-p") a.p = Number(v);
  else if (k === "-n") a.n = Number(v);
  else if (k === "-d") a.d = Number(v);
  else if (k === "-t") a.t = Number(v);
  else if (k === "-r") a.r = Number(v);
  else throw new Error(`unknown argument ${k}`);
}
if (!a.m) throw new Error("give the model with -m F.gguf");

const stats = (v) => {
  if (v.length === 0) return [null, 0];
  const mean = v.reduce((x, y) => x + y, 0) / v.length;
  const sd = v.length > 1 ? Math.sqrt(v.reduce((x, y) => x + (y - mean) ** 2, 0) / (v.length - 1)) : 0;
  return [mean, sd];
};

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: a.t });
const model = await llama.loadModel({ modelPath: a.m, gpuLayers: 0 });
const context = await model.createContext({
  contextSize: a.d + Math.max(a.p, a.n) + 16,
  batchSize: a.p > 0 ? a.p : 512,
  threads: { ideal: a.t, min: a.t },
  sequences: 1,
});
const seq = context.getSequence();
const ids = Array.from({ length: a.d + Math.max(a.p, a.n) }, (_, i) => (i * 7919 + 13) % 512);
const after = ids.slice(a.d);
// The depth's tokens, untimed, in chunks of the batch size.
const fillDepth = async () => {
  await seq.clearHistory();
  const chunk = a.p > 0 ? a.p : 512;
  for (let i = 0; i < a.d; i += chunk) await seq.controlledEvaluate(ids.slice(i, Math.min(a.d, i + chunk)));
};
const pp = [], tg = [];
const greedy = { generateNext: { token: true, options: { temperature: 0 } } };
for (let rep = 0; rep < a.r; rep++) {
  if (a.p > 0) {
    await fillDepth();
    const prompt = after.slice(0, a.p).map((t, i) => (i === a.p - 1 ? [t, greedy] : t));
    const t0 = performance.now();
    await seq.controlledEvaluate(prompt);
    pp.push(a.p / ((performance.now() - t0) / 1000));
  }
  if (a.n > 0) {
    await fillDepth();
    const t0 = performance.now();
    for (let i = 0; i < a.n; i++) await seq.controlledEvaluate([[after[i], greedy]]);
    tg.push(a.n / ((performance.now() - t0) / 1000));
  }
}
const [ppm, pps] = stats(pp), [tgm, tgs] = stats(tg);
process.stdout.write(JSON.stringify({
  engine: `llama.cpp ${llama.llamaCppRelease?.release ?? ""} (node-llama-cpp)`, model: a.m,
  n_prompt: a.p, n_gen: a.n, n_depth: a.d, threads: a.t, reps: a.r,
  pp_tokens_per_s: ppm, pp_sd: pps, tg_tokens_per_s: tgm, tg_sd: tgs,
}) + "\n");
await context.dispose();
await model.dispose();
await llama.dispose();
