#!/usr/bin/env node
// Peer side of `make test-peer`: run llama.cpp (through node-llama-cpp, CPU only) greedily on a
// GGUF file from a given list of prompt token ids, and print one JSON object.
//
//   node peer_greedy.mjs --model F.gguf --tokens 1,15043,3186 -n 64 [--threads 2]
//        [--ctx 512] [--kv f16|f32] [--flash-attn] [--no-probs] [--logits-out L.bin]
//        [--log-level warn|info|debug]   (llama.cpp's messages go into the JSON's "log")
//
// The ids are evaluated exactly as given (llama.cpp never tokenizes anything here), through the
// low-level LlamaContextSequence.controlledEvaluate API. Sampling is temperature 0, which makes
// node-llama-cpp build a sampler chain of llama.cpp's greedy sampler alone: no repetition/DRY
// penalty, token bias, grammar, top-k/top-p/min-p or XTC is in the chain, so the chosen token is
// the argmax of the raw logits (first maximum, i.e. the lowest id on an exact tie).
// With probabilities on (the default), the sampler's full candidate list is the softmax of the raw
// logits; log(p1) - log(p2) gives the top-2 logit gap at every step.
//
// Output: {"tokens": [...], "gaps": [...], "second": [...], "stop_reason": "length"|"eos", ...}
// gaps[k] is llama.cpp's logit(top1) - logit(top2) at step k (null if the runner-up underflowed),
// second[k] the runner-up id. --logits-out writes, like tzero's option of that name, one float32
// row of n_vocab per generated token, but relative to the row's top: log(p_i) - log(p_top), which
// is l_i - l_top (NaN where p_i underflowed to 0, i.e. about 87 logits below the top).
// On failure: {"error": "...", "log": [...]} and exit status 2.
import fs from "node:fs";
import process from "node:process";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parseArgs(argv) {
  const a = { threads: 2, ctx: 512, kv: "f16", flashAttn: false, probs: true, n: 16 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === "--model" || k === "-m") a.model = next();
    else if (k === "--tokens") a.tokens = next().split(/[,\s]+/).filter(Boolean).map(Number);
    else if (k === "-n" || k === "--n-predict") a.n = Number(next());
    else if (k === "--threads" || k === "-t") a.threads = Number(next());
    else if (k === "--ctx" || k === "-c") a.ctx = Number(next());
    else if (k === "--kv") a.kv = next().toLowerCase();
    else if (k === "--flash-attn") a.flashAttn = true;
    else if (k === "--no-probs") a.probs = false;
    else if (k === "--logits-out") a.logitsOut = next();
    else if (k === "--log-level") a.logLevel = next();
    else throw new Error(`unknown argument ${k}`);
  }
  if (!a.model) throw new Error("give the model with --model F.gguf");
  if (!a.tokens || a.tokens.length === 0 || a.tokens.some((t) => !Number.isInteger(t) || t < 0))
    throw new Error("give the prompt ids with --tokens 1,2,3");
  if (!Number.isInteger(a.n) || a.n < 0) throw new Error("-n must be an integer >= 0");
  if (!["f16", "f32"].includes(a.kv)) throw new Error("--kv is f16 or f32");
  return a;
}

// Top-2 gap in logits from the probability list (sorted by logit, highest first).
function topTwo(probabilities) {
  const it = probabilities.entries();
  const first = it.next().value;
  const second = it.next().value;
  if (!first) return { top: null, second: null, gap: null };
  if (!second) return { top: first[0], second: null, gap: null };
  const gap = second[1] > 0 ? Math.log(first[1]) - Math.log(second[1]) : null;
  return { top: first[0], second: second[0], gap };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const log = [];
  const llama = await getLlama({
    gpu: false,
    build: "never",
    logLevel: args.logLevel ?? LlamaLogLevel.warn,
    logger: (level, message) => {
      const m = String(message).trimEnd();
      if (m) log.push(`${level}: ${m}`);
    },
    maxThreads: args.threads,
  });
  const out = {
    llama_cpp: { ...llama.llamaCppRelease, build_type: llama.buildType },
    package: "node-llama-cpp",
    threads: args.threads,
    kv_type: args.kv,
    flash_attention: args.flashAttn,
    prompt_tokens: args.tokens,
  };
  let model;
  try {
    model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0, checkTensors: true });
  } catch (e) {
    process.stdout.write(JSON.stringify({ ...out, error: `load: ${e.message}`, log }) + "\n");
    process.exitCode = 2;
    return;
  }
  const need = args.tokens.length + args.n + 1;
  const kvType = args.kv.toUpperCase();
  const context = await model.createContext({
    contextSize: Math.max(args.ctx, need),
    batchSize: Math.max(args.tokens.length, 1),
    threads: { ideal: args.threads, min: args.threads },
    flashAttention: args.flashAttn,
    sequences: 1,
    experimentalKvCacheKeyType: kvType,
    experimentalKvCacheValueType: kvType,
  });
  const seq = context.getSequence();
  const eos = model.tokens.eos;
  const next = { generateNext: { token: true, probabilities: args.probs, options: { temperature: 0 } } };
  const tokens = [], gaps = [], second = [], mismatches = [];
  if (args.logitsOut && !args.probs) throw new Error("--logits-out needs the probabilities");
  const logitsFd = args.logitsOut ? fs.openSync(args.logitsOut, "w") : null;
  let stop = "length";
  let input = args.tokens.map((t, i) => (i === args.tokens.length - 1 ? [t, next] : t));
  const t0 = performance.now();
  for (let step = 0; step < args.n; step++) {
    const res = await seq.controlledEvaluate(input);
    const r = res[input.length - 1];
    const tok = r?.next?.token;
    if (tok == null) throw new Error(`no token at step ${step}`);
    tokens.push(tok);
    if (args.probs && r.next.probabilities) {
      const t2 = topTwo(r.next.probabilities);
      gaps.push(t2.gap);
      second.push(t2.second);
      // The greedy pick must be the top logit; on an exact tie the order of the sorted list is
      // not defined, so only flag a mismatch when the gap is not zero.
      if (t2.top !== tok && t2.gap !== 0) mismatches.push({ step, token: tok, top: t2.top });
      if (logitsFd !== null) {
        const p = r.next.probabilities;
        let n = 0;
        for (const id of p.keys()) n = Math.max(n, id + 1);
        const row = new Float32Array(Math.max(n, out.n_vocab ?? 0)).fill(NaN);
        out.n_vocab = row.length;
        const lTop = Math.log(p.get(t2.top));
        for (const [id, q] of p) if (q > 0) row[id] = Math.log(q) - lTop;
        fs.writeSync(logitsFd, new Uint8Array(row.buffer));
      }
    }
    if (tok === eos) {
      stop = "eos";
      break;
    }
    if (step + 1 === args.n) break;
    input = [[tok, next]];
  }
  const seconds = (performance.now() - t0) / 1000;
  if (logitsFd !== null) fs.closeSync(logitsFd);
  Object.assign(out, {
    tokens,
    stop_reason: stop,
    eos,
    n_ctx: context.contextSize,
    gaps: args.probs ? gaps : null,
    second: args.probs ? second : null,
    argmax_mismatches: mismatches,
    seconds,
    log,
  });
  process.stdout.write(JSON.stringify(out) + "\n");
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e) }) + "\n");
  process.exitCode = 2;
});
