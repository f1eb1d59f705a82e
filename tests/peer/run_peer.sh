#!/usr/bin/env bash
# make test-peer: compare tzero's greedy tokens with llama.cpp's (node-llama-cpp 3.21.1, CPU) on the
# same GGUF files, in the same run. See docs/PEER.md.
#
#   tests/peer/run_peer.sh TZERO_BIN
#
# Environment (all optional):
#   PEER_PRESETS   gen-model presets to test (default: every preset of `tzero gen-model --list`)
#   PEER_DTYPES    weight types (default: f32 f16 bf16 q8_0 q4_0; gen-model also has q4_1 q5_0
#                  q5_1 iq4_nl mxfp4 q4_k q5_k q6_k)
#   PEER_N         tokens to generate for every case (default: 200 for stories260K, 64 for the
#                  tiny presets, 32 for 110m, 8 for the large presets)
#   PEER_PROMPT    prompt text (default: "Once upon a time")
#   PEER_MODELS    extra GGUF files to compare (space separated), N 16 unless PEER_N; their gap
#                  threshold is that of PEER_MODELS_DTYPE (default f32)
#   PEER_STORIES   0 to skip the stories260K files (default 1)
#   PEER_DATA      shared data folder (default: <repo>/../shared/data)
#   PEER_THREADS   threads for both engines (default 2)
#   PEER_KV        llama.cpp KV cache type, f16 (its default) or f32
#   PEER_GAP_THRESHOLD  a divergence passes when tzero's logit gap there is below this (default:
#                  0.05 for f32/f16 weights, 0.25 for bf16/q8_0/q4_0, 0.5 for other types such as
#                  the k-quants; see docs/PEER.md)
#   PEER_MAX_DIFF  also fail a case whose largest logit difference over the agreed steps is above
#                  this (default: unset, reported only); e.g. PEER_KV=f32 PEER_MAX_DIFF=1e-3
#   PEER_CACHE     where generated models and per-case outputs go (default: <dir of TZERO_BIN>/peer-cache)
#   PEER_KEEP_MB   generated models larger than this are deleted after use (default 1024)
#   PEER_MIN_FREE_GB    skip generating a large model when less disk than this is free (default 8)
#   PEER_MAX_MODEL_GB   skip a preset whose file would be larger than this (default: 40% of RAM,
#                  since llama.cpp may hold a repacked copy of the weights beside the mapped file)
#   PEER_REPORT    JSON report path (default: <dir of TZERO_BIN>/peer-report.json)
#   PEER_TIMEOUT   seconds allowed for each command (default 3600)
set -u -o pipefail

die() { echo "run_peer: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: $0 TZERO_BIN"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ -x "$1" ] || die "$1: not an executable (build tzero first)"
TZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BUILD_DIR=$(dirname "$TZ")

command -v node >/dev/null || die "node is needed (Node.js >= 20)"
command -v npm >/dev/null || die "npm is needed"
if [ ! -d "$HERE/node_modules/node-llama-cpp" ]; then
  echo "== installing node-llama-cpp (npm, once)"
  (cd "$HERE" && npm install --no-audit --no-fund) || die "npm install failed in $HERE"
fi

PROMPT=${PEER_PROMPT:-Once upon a time}
THREADS=${PEER_THREADS:-2}
KV=${PEER_KV:-f16}
MAX_DIFF=${PEER_MAX_DIFF:-}
DATA=${PEER_DATA:-$ROOT/../shared/data}
CACHE=${PEER_CACHE:-$BUILD_DIR/peer-cache}
REPORT=${PEER_REPORT:-$BUILD_DIR/peer-report.json}
KEEP_MB=${PEER_KEEP_MB:-1024}
MIN_FREE_GB=${PEER_MIN_FREE_GB:-8}
TIMEOUT=${PEER_TIMEOUT:-3600}
DTYPES=${PEER_DTYPES:-f32 f16 bf16 q8_0 q4_0}
PRESETS=${PEER_PRESETS:-$("$TZ" gen-model --list | awk '{print $1}' | tr '\n' ' ')}
MEM_GB=$(awk '/MemTotal/ {printf "%d", $2 / 1048576}' /proc/meminfo)
MAX_MODEL_GB=${PEER_MAX_MODEL_GB:-$((MEM_GB * 2 / 5))}
# Estimated file size in GB of a preset at a dtype: parameters (gen-model --list) x bytes each.
est_gb() {
  local params
  params=$("$TZ" gen-model --list | awk -v p="$1" '$1 == p {sub("B", "", $3); print $3}')
  local b
  case "$2" in f32) b=4 ;; f16 | bf16) b=2 ;; q8_0) b=1.0625 ;; q6_k) b=0.8203 ;; q5_1) b=0.75 ;; q5_0 | q5_k) b=0.6875 ;; q4_1) b=0.625 ;; *) b=0.5625 ;; esac
  awk -v n="${params:-0}" -v b="$b" 'BEGIN { printf "%d", n * b + 0.5 }'
}
mkdir -p "$CACHE/models" "$CACHE/runs" || die "cannot create $CACHE"
ROWS="$CACHE/rows.jsonl"
: >"$ROWS"

# Default tokens per case: many for the small models, few for the ones scalar kernels make slow.
default_n() {
  case "$1" in
    stories*) echo 200 ;;
    tiny | tiny-qwen2 | tiny-qwen3 | tiny-qwen3moe | tiny-mixtral | tiny-qwen2moe | tiny-gpt-oss | tiny-glm4moe | tiny-deepseek2) echo 64 ;;
    110m) echo 32 ;;
    *) echo 8 ;;
  esac
}
# Gap threshold for a weight type, about twice the largest logit difference measured between the
# engines on the llama-shaped files (docs/PEER.md): float paths 0.025, bf16/q8_0/q4_0 0.15,
# k-quants 0.23.
gap_threshold() {
  if [ -n "${PEER_GAP_THRESHOLD:-}" ]; then echo "$PEER_GAP_THRESHOLD"; return; fi
  case "$1" in f32 | f16) echo 0.05 ;; bf16 | q8_0 | q4_0) echo 0.25 ;; *) echo 0.5 ;; esac
}
is_small() { case "$1" in tiny | tiny-qwen2 | tiny-qwen3 | tiny-qwen3moe | tiny-mixtral | tiny-qwen2moe | tiny-gpt-oss | tiny-glm4moe | tiny-deepseek2 | 110m) return 0 ;; *) return 1 ;; esac; }

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
ids_csv() { node -e 'const j=JSON.parse(require("fs").readFileSync(0,"utf8"));console.log((j.ids??j.prompt_tokens).join(","))' 2>/dev/null; }
# The human line (stderr) goes to the terminal, the JSON row (stdout) to the rows file.
# shellcheck disable=SC2069
row() { node "$HERE/compare.mjs" "$@" 2>&1 >>"$ROWS"; }

# run_case NAME FILE N MODE DTYPE  (MODE: text = PEER_PROMPT, bos = no prompt, BOS only)
run_case() {
  local name=$1 file=$2 n=$3 mode=$4 dtype=$5
  local dir="$CACHE/runs/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "== $name  (n=$n, $([ "$mode" = bos ] && echo "BOS only" || echo "prompt \"$PROMPT\""))"
  local expect="" t0 s_ours s_peer
  local -a pargs=()
  if [ "$mode" = text ]; then
    pargs=(-p "$PROMPT")
    if ! expect=$(timeout "$TIMEOUT" "$TZ" tokenize -m "$file" -p "$PROMPT" --json 2>"$dir/tokenize.err" | ids_csv); then
      echo "  tzero tokenize failed: $(tail -1 "$dir/tokenize.err")"
      row error --name "$name" --reason "tzero tokenize: $(tail -1 "$dir/tokenize.err")"
      return
    fi
  fi
  echo "  \$ tzero run -m $file ${pargs[*]:+-p \"$PROMPT\"} -n $n -t $THREADS --json --logits-out $dir/logits.bin"
  t0=$(now)
  if ! timeout "$TIMEOUT" "$TZ" run -m "$file" "${pargs[@]}" -n "$n" -t "$THREADS" --json \
      --logits-out "$dir/logits.bin" --force >"$dir/ours.json" 2>"$dir/ours.err"; then
    echo "  tzero run failed: $(tail -1 "$dir/ours.err")"
    row error --name "$name" --reason "tzero run: $(tail -1 "$dir/ours.err")"
    return
  fi
  s_ours=$(elapsed "$t0")
  local ids
  ids=$(ids_csv <"$dir/ours.json") || { row error --name "$name" --reason "tzero run: bad JSON"; return; }
  echo "  \$ node tests/peer/peer_greedy.mjs -m $file --tokens $ids -n $n --threads $THREADS --kv $KV --logits-out $dir/peer_logits.bin"
  t0=$(now)
  timeout "$TIMEOUT" node "$HERE/peer_greedy.mjs" -m "$file" --tokens "$ids" -n "$n" \
    --threads "$THREADS" --kv "$KV" --logits-out "$dir/peer_logits.bin" >"$dir/peer.json" 2>"$dir/peer.err"
  s_peer=$(elapsed "$t0")
  if [ ! -s "$dir/peer.json" ]; then
    echo "  llama.cpp side failed: $(tail -3 "$dir/peer.err")"
    row error --name "$name" --reason "peer_greedy.mjs: $(tail -1 "$dir/peer.err")"
    return
  fi
  echo "  time: tzero ${s_ours}s, llama.cpp ${s_peer}s (each including the model load)"
  local -a extra=()
  [ -n "$expect" ] && extra=(--expect-prompt "$expect")
  row row --name "$name" --file "$file" --n "$n" --ours "$dir/ours.json" --logits "$dir/logits.bin" \
    --peer "$dir/peer.json" --peer-logits "$dir/peer_logits.bin" --seconds-ours "$s_ours" --seconds-peer "$s_peer" \
    --dtype "$dtype" --threshold "$(gap_threshold "$dtype")" "${extra[@]}"
}

free_gb() { df -Pk "$1" | awk 'NR==2 { printf "%d", $4 / 1048576 }'; }

# --- stories260K: the real checkpoint, as GGUF and as converted from llama2.c -------------------
if [ "${PEER_STORIES:-1}" != 0 ]; then
  if [ -d "$DATA" ]; then
    N=${PEER_N:-$(default_n stories)}
    g="$DATA/gguf/stories260K.gguf"
    if [ -f "$g" ]; then
      run_case stories260K.gguf "$g" "$N" text f32
      run_case stories260K.gguf:bos "$g" "$N" bos f32
    else
      echo "== SKIP stories260K.gguf: $g not found"
      row skip --name stories260K.gguf --reason "$g not found"
    fi
    c="$CACHE/models/stories260K-llama2c.gguf"
    if [ -f "$DATA/llama2c/stories260K.bin" ] && [ -f "$DATA/llama2c/tok512.bin" ]; then
      if "$TZ" convert --llama2c "$DATA/llama2c/stories260K.bin" --tokenizer "$DATA/llama2c/tok512.bin" \
          -o "$c" --force 2>"$CACHE/convert.err"; then
        run_case stories260K-llama2c "$c" "$N" text f32
        run_case stories260K-llama2c:bos "$c" "$N" bos f32
      else
        echo "== stories260K-llama2c: tzero convert failed: $(tail -1 "$CACHE/convert.err")"
        row error --name stories260K-llama2c --reason "tzero convert: $(tail -1 "$CACHE/convert.err")"
      fi
    else
      echo "== SKIP stories260K-llama2c: $DATA/llama2c/{stories260K,tok512}.bin not found"
      row skip --name stories260K-llama2c --reason "llama2c files not found"
    fi
  else
    echo "== SKIP stories260K (both files): the shared data folder $DATA is absent"
    row skip --name stories260K --reason "$DATA absent"
  fi
fi

# --- gen-model presets x dtypes -------------------------------------------------------------------
for preset in $PRESETS; do
  N=${PEER_N:-$(default_n "$preset")}
  for dtype in $DTYPES; do
    name="$preset-$dtype"
    f="$CACHE/models/$name.gguf"
    # Regenerate when missing or older than the tzero binary (gen-model may have changed).
    if [ "$(est_gb "$preset" "$dtype")" -gt "$MAX_MODEL_GB" ]; then
      echo "== SKIP $name: about $(est_gb "$preset" "$dtype") GB, more than PEER_MAX_MODEL_GB=$MAX_MODEL_GB"
      row skip --name "$name" --reason "about $(est_gb "$preset" "$dtype") GB: too large for this machine"
      continue
    fi
    if [ ! -f "$f" ] || [ "$f" -ot "$TZ" ]; then
      if ! is_small "$preset" && [ "$(free_gb "$CACHE")" -lt "$MIN_FREE_GB" ]; then
        echo "== SKIP $name: only $(free_gb "$CACHE") GB free in $CACHE (PEER_MIN_FREE_GB=$MIN_FREE_GB)"
        row skip --name "$name" --reason "disk: $(free_gb "$CACHE") GB free"
        continue
      fi
      t0=$(now)
      if ! timeout "$TIMEOUT" "$TZ" gen-model --preset "$preset" --dtype "$dtype" --force -o "$f.tmp" \
          2>"$CACHE/gen.err"; then
        rm -f "$f.tmp"
        echo "== $name: tzero gen-model failed: $(tail -1 "$CACHE/gen.err")"
        row error --name "$name" --reason "tzero gen-model: $(tail -1 "$CACHE/gen.err")"
        continue
      fi
      mv "$f.tmp" "$f"
      echo "== generated $name ($(du -m "$f" | cut -f1) MB) in $(elapsed "$t0")s"
    fi
    run_case "$name" "$f" "$N" text "$dtype"
    if [ "$(du -m "$f" | cut -f1)" -gt "$KEEP_MB" ]; then
      rm -f "$f"
      echo "  (deleted $f: larger than PEER_KEEP_MB=$KEEP_MB)"
    fi
  done
done

# --- user-supplied files ----------------------------------------------------------------------------
for m in ${PEER_MODELS:-}; do
  if [ -f "$m" ]; then run_case "$(basename "$m")" "$m" "${PEER_N:-16}" text "${PEER_MODELS_DTYPE:-f32}"
  else row error --name "$(basename "$m")" --reason "$m not found"; fi
done

ENV_JSON=$(node -e '
const os = require("os");
const [tz, prompt, threads, kv, here] = process.argv.slice(1);
console.log(JSON.stringify({ tzero: tz, prompt, threads: Number(threads), kv_cache: kv,
  peer: "node-llama-cpp " + require(here + "/node_modules/node-llama-cpp/package.json").version,
  cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version }));
' "$("$TZ" --version 2>/dev/null | head -1)" "$PROMPT" "$THREADS" "$KV" "$HERE" 2>/dev/null || echo '{}')
node "$HERE/compare.mjs" summary --rows "$ROWS" --report "$REPORT" --max-diff "$MAX_DIFF" --env "$ENV_JSON"
