#!/usr/bin/env bash
# `make run`: generate with a model at two thread counts and show that the logits digests match.
# Usage: run_default.sh TZERO [MODEL] [PROMPT]. Without MODEL, a small random-weight model is
# made once with `tzero gen-model` under models/.
set -euo pipefail
tzero=$1
model=${2:-}
prompt=${3:-Once upon a time}
if [ -z "$model" ]; then
  model=models/tiny-q8_0.gguf
  if [ ! -f "$model" ]; then
    mkdir -p models
    echo "== making the embedded default model ($model) with gen-model"
    "$tzero" gen-model --preset tiny --dtype q8_0 --seed 1 -o "$model"
  fi
fi
if [ -z "${2:-}" ]; then
  echo "== note: $model has random weights (tzero gen-model): the text it prints is meaningless by"
  echo "   design. What the run proves is in the digests: an XXH3-128 hash over every logits row,"
  echo "   in order, which must be the same bits at every thread count (MODEL=path.gguf uses yours)."
fi
threads=$(nproc)
[ "$threads" -gt 1 ] || threads=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in 1 "$threads"; do
  echo "== $model, prompt \"$prompt\", $t thread(s)"
  "$tzero" run -m "$model" -p "$prompt" -n 32 -t "$t" 2>"$tmp/err.$t"
  cat "$tmp/err.$t"
done
d1=$(sed -n 's/^logits digest: //p' "$tmp/err.1")
d2=$(sed -n 's/^logits digest: //p' "$tmp/err.$threads")
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then
  echo "== identical: the logits of every step are the same bits at 1 and $threads threads ($d1)"
  echo "   (same model file, prompt and fingerprint: the same digest on any machine; tzero lock"
  echo "   records it, tzero verify checks it later)"
else
  echo "== DIFFERENT digests ($d1 vs $d2): the reproducibility contract is broken" >&2
  exit 1
fi
echo
echo "== the audit: every prompt under every configuration, traced and compared op by op"
mkdir -p out
"$tzero" audit -m "$model" -n 16 --report out/audit --force  # rewritten on every make run
if [ -z "${2:-}" ]; then
  echo
  echo "== next: a real model (its text means something; the digests still match at every thread count):"
  echo "   $tzero run -m Qwen/Qwen3-0.6B-GGUF:Q8_0 -p \"The capital of France is\" -n 16"
  echo "   (-m ORG/REPO:QUANT downloads the file once into ~/.cache/huggingface, as tzero pull does;"
  echo "   make run MODEL=path/to/model.gguf runs this job on a file you have)"
fi
