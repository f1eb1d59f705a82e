#!/usr/bin/env bash
# Speed side by side: tzero (deterministic and fast modes) and llama.cpp (npm node-llama-cpp,
# pinned in tests/peer) on the same GGUF files, same thread count, same run.
#   bench/compare_llama_cpp.sh TZERO_BIN MODEL.gguf [MODEL.gguf ...]
# Env: THREADS (2), PP (128), TG (64), DEPTH (0: tokens already in the cache before each test),
# REPS (3). Prints one JSON line per engine and file, then a table with the ratios tzero
# deterministic / llama.cpp and deterministic / fast. Installs node-llama-cpp under tests/peer
# when missing (npm registry).
set -euo pipefail
tzero=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
threads=${THREADS:-2} pp=${PP:-128} tg=${TG:-64} depth=${DEPTH:-0} reps=${REPS:-3}
if [ ! -d "$here/../tests/peer/node_modules/node-llama-cpp" ]; then
  (cd "$here/../tests/peer" && npm install --no-audit --no-fund >/dev/null)
fi
rows=()
for model in "$@"; do
  echo "== $model (threads $threads, depth $depth, load $(cut -d' ' -f1 /proc/loadavg))" >&2
  # Each engine starts with the file in the page cache: llama.cpp copies (repacks) weights into
  # its own memory, which can push a large file out of the cache for the next engine.
  warm() { cat "$model" >/dev/null; }
  warm
  det=$("$tzero" bench -m "$model" -p "$pp" -n "$tg" -d "$depth" -t "$threads" -r "$reps" --json)
  warm
  fast=$("$tzero" bench -m "$model" -p "$pp" -n "$tg" -d "$depth" -t "$threads" -r "$reps" \
    --mode fast --json)
  warm
  peer=$(node "$here/llama_cpp_bench.mjs" -m "$model" -p "$pp" -n "$tg" -d "$depth" -t "$threads" \
    -r "$reps")
  printf '%s\n%s\n%s\n' "$det" "$fast" "$peer"
  rows+=("$(python3 - "$model" "$det" "$fast" "$peer" <<'PY'
import json, os, sys
m, d, f, p = sys.argv[1], *map(json.loads, sys.argv[2:])
def fmt(j, k):
    v = j.get(k)
    return "-" if v is None else f"{v:.1f}±{j[k.replace('tokens_per_s', 'sd')]:.1f}"
def ratio(a, b, k):
    return "-" if not a.get(k) or not b.get(k) else f"{a[k] / b[k]:.2f}x"
pp, tg = "pp_tokens_per_s", "tg_tokens_per_s"
print(f"{os.path.basename(m):20s} pp {fmt(d,pp):>12s} {fmt(f,pp):>12s} {fmt(p,pp):>12s} "
      f"{ratio(d,p,pp):>6s} {ratio(d,f,pp):>6s}   tg {fmt(d,tg):>11s} {fmt(f,tg):>11s} "
      f"{fmt(p,tg):>11s} {ratio(d,p,tg):>6s} {ratio(d,f,tg):>6s}")
PY
)")
done
printf '\n%-20s    %12s %12s %12s %6s %6s      %11s %11s %11s %6s %6s\n' "model" "tzero det" \
  "tzero fast" "llama.cpp" "/llama" "/fast" "tzero det" "tzero fast" "llama.cpp" "/llama" "/fast" >&2
printf '%s\n' "${rows[@]}" >&2
