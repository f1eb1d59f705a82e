#!/usr/bin/env bash
# Speed side by side: tzero (deterministic and fast modes) and llama.cpp (npm node-llama-cpp,
# pinned in tests/peer) on the same GGUF files, same thread count, same run.
#   bench/compare_llama_cpp.sh TZERO_BIN MODEL.gguf [MODEL.gguf ...]
# Env: THREADS (2), PP (128), TG (64), REPS (3). Prints one JSON line per engine and file, then
# a table. Installs node-llama-cpp under tests/peer when missing (npm registry).
set -euo pipefail
tzero=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
threads=${THREADS:-2} pp=${PP:-128} tg=${TG:-64} reps=${REPS:-3}
if [ ! -d "$here/../tests/peer/node_modules/node-llama-cpp" ]; then
  (cd "$here/../tests/peer" && npm install --no-audit --no-fund >/dev/null)
fi
rows=()
for model in "$@"; do
  echo "== $model (threads $threads, load $(cut -d' ' -f1 /proc/loadavg))" >&2
  det=$("$tzero" bench -m "$model" -p "$pp" -n "$tg" -t "$threads" -r "$reps" --json)
  fast=$("$tzero" bench -m "$model" -p "$pp" -n "$tg" -t "$threads" -r "$reps" --mode fast --json)
  peer=$(node "$here/llama_cpp_bench.mjs" -m "$model" -p "$pp" -n "$tg" -t "$threads" -r "$reps")
  printf '%s\n%s\n%s\n' "$det" "$fast" "$peer"
  rows+=("$(python3 - "$model" "$det" "$fast" "$peer" <<'PY'
import json, os, sys
m, d, f, p = sys.argv[1], *map(json.loads, sys.argv[2:])
fmt = lambda j, k: f"{j[k]:.1f}±{j[k.replace('tokens_per_s', 'sd')]:.1f}"
print(f"{os.path.basename(m):28s} pp {fmt(d,'pp_tokens_per_s'):>12s} {fmt(f,'pp_tokens_per_s'):>12s} {fmt(p,'pp_tokens_per_s'):>12s}   "
      f"tg {fmt(d,'tg_tokens_per_s'):>11s} {fmt(f,'tg_tokens_per_s'):>11s} {fmt(p,'tg_tokens_per_s'):>11s}")
PY
)")
done
printf '\n%-28s    %12s %12s %12s      %11s %11s %11s\n' "model" "tzero det" "tzero fast" "llama.cpp" \
  "tzero det" "tzero fast" "llama.cpp" >&2
printf '%s\n' "${rows[@]}" >&2
