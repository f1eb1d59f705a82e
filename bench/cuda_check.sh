#!/usr/bin/env bash
# The one-shot CUDA check for a machine with an NVIDIA GPU (Hopper or Ampere), docs/CUDA.md:
#   1. configure and build build-cuda (-DTZERO_CUDA=ON), unless SKIP_BUILD=1 and it is built;
#   2. run the GPU tests (kernels bit-identical to the CPU, whole-model digests for
#      --gpu-layers 0/1/all in every dtype, run-to-run, batch mates, traces) and the CLI tests;
#   3. benchmark portable-mode GPU vs CPU (decode batch 1 and 32, prefill) on gen-model
#      tinyllama-1.1b and qwen2.5-0.5b in F16 and Q8_0, check their digests CPU == GPU, and
#      measure the device copy bandwidth to put batch-1 decode against its roofline;
#   4. print one table. Everything is bounded by `timeout`; the whole run stays under ~8 min.
# Output goes to $OUT (if set) or bench/cuda_check.out: log.txt, summary.txt, gtest XML, JSON.
# Usage: bench/cuda_check.sh            (from the repository root; exit 0 = tests passed)
#        SKIP_BUILD=1 bench/cuda_check.sh   (reuse a carried build-cuda)
set -u
cd "$(dirname "$0")/.."
OUTDIR="${OUT:-bench/cuda_check.out}"
mkdir -p "$OUTDIR"
LOG="$OUTDIR/log.txt"
SUMMARY="$OUTDIR/summary.txt"
: >"$LOG"
: >"$SUMMARY"
BUILD=build-cuda
JOBS="${JOBS:-16}"
T0=$(date +%s)
DEADLINE=$((T0 + ${BUDGET:-540}))  # every step's timeout is cut to what is left of this
T() {
  local left=$((DEADLINE - $(date +%s)))
  [ "$left" -lt 2 ] && left=1
  if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
say() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
sum() { echo "$*" | tee -a "$SUMMARY"; }

say "host: $(hostname), $(nproc) cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader 2>&1 | tee -a "$LOG"

# 1. Build.
if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$BUILD/tzero" ]; then
  say "build: reusing $BUILD"
else
  NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
  say "build: configure ($NVCC)"
  timeout "$(T 120)" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_WERROR=ON \
    -DTZERO_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES=90 >>"$LOG" 2>&1 ||
    { say "FAIL: configure (see log.txt)"; sum "build: CONFIGURE FAILED"; exit 1; }
  say "build: ninja -j$JOBS"
  timeout "$(T 300)" ninja -C "$BUILD" -j "$JOBS" >>"$LOG" 2>&1 ||
    { say "FAIL: build (see log.txt)"; tail -30 "$LOG"; sum "build: BUILD FAILED"; exit 1; }
fi
TZ="$BUILD/tzero"
sum "device: $("$TZ" device | sed -n 2p | sed 's/^device: //')"

# 2. Tests.
say "tests: GPU (tz_gpu)"
timeout "$(T 240)" "$BUILD/tests/tz_gpu" --gtest_output="xml:$OUTDIR/tz_gpu.xml" >>"$LOG" 2>&1
GPU_RC=$?
timeout "$(T 60)" "$BUILD/tests/tz_e2e" --gtest_filter='CudaCli.*' \
  --gtest_output="xml:$OUTDIR/tz_cli.xml" >>"$LOG" 2>&1
CLI_RC=$?
grep -E '^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?|^\[  FAILED  \] [A-Za-z]' "$LOG" |
  sort -u >>"$SUMMARY"
SKIPPED=0
sum "tests: tz_gpu rc=$GPU_RC, CudaCli rc=$CLI_RC (0 = all passed; see tz_gpu.xml)"
grep -qi '<skipped' "$OUTDIR/tz_gpu.xml" 2>/dev/null &&
  { SKIPPED=1; sum "WARNING: GPU tests SKIPPED (no device?)"; }

# 3. Benchmarks.
MODELS="$OUTDIR/models"
mkdir -p "$MODELS"
say "bench: gen-model (4 files, in parallel)"
PRESETS="${PRESETS:-tinyllama-1.1b qwen2.5-0.5b}"  # PRESETS=tiny: a dry run of the plumbing
for p in $PRESETS; do
  for d in f16 q8_0; do
    [ -f "$MODELS/$p-$d.gguf" ] ||
      timeout "$(T 200)" "$TZ" gen-model --preset "$p" --dtype "$d" --seed 1 --force -o "$MODELS/$p-$d.gguf" \
        >>"$LOG" 2>&1 &
  done
done
wait
BW=$(timeout "$(T 60)" "$TZ" device --bandwidth --mib 2048 --json 2>>"$LOG" |
  grep -o '"bandwidth_gb_s":[0-9.eE+-]*' | cut -d: -f2)
BW=${BW:-0}
sum "device copy bandwidth: $BW GB/s (read + write)"
num() { grep -o "\"$1\":[0-9.eE+-]*" | head -1 | cut -d: -f2; }
THREADS=$(nproc)
GPU=(--gpu-layers all --mode portable)
ROWS=()
for p in $PRESETS; do
  for d in f16 q8_0; do
    M="$MODELS/$p-$d.gguf"
    [ -f "$M" ] || { sum "$p $d: gen-model failed"; continue; }
    BYTES=$(stat -c %s "$M")
    say "bench: $p $d"
    G1=$(timeout "$(T 90)" "$TZ" bench -m "$M" -p 512 -n 64 -r 2 "${GPU[@]}" --json 2>>"$LOG")
    G32=$(timeout "$(T 90)" "$TZ" bench -m "$M" -c 32 -p 16 -n 32 -r 1 "${GPU[@]}" --json 2>>"$LOG")
    C1=$(timeout "$(T 60)" "$TZ" bench -m "$M" -p 64 -n 8 -r 1 -t "$THREADS" --json 2>>"$LOG")
    C32=$(timeout "$(T 90)" "$TZ" bench -m "$M" -c 32 -p 16 -n 8 -r 1 -t "$THREADS" --json 2>>"$LOG")
    echo "$G1 $G32 $C1 $C32" >>"$OUTDIR/bench.jsonl"
    # Digest check at full size: CPU vs all layers on the GPU vs half of them.
    DC=$(timeout "$(T 60)" "$TZ" run -m "$M" -n 8 -p "Once upon a time" -t "$THREADS" --json 2>>"$LOG" |
      grep -o '"logits_digest":"[0-9a-f]*"')
    DG=$(timeout "$(T 60)" "$TZ" run -m "$M" -n 8 -p "Once upon a time" "${GPU[@]}" --json 2>>"$LOG" |
      grep -o '"logits_digest":"[0-9a-f]*"')
    DH=$(timeout "$(T 60)" "$TZ" run -m "$M" -n 8 -p "Once upon a time" --gpu-layers 6 --mode portable \
      --json 2>>"$LOG" | grep -o '"logits_digest":"[0-9a-f]*"')
    SAME=no
    [ -n "$DC" ] && [ "$DC" = "$DG" ] && [ "$DC" = "$DH" ] && SAME=yes
    g1=$(echo "$G1" | num tg_tokens_per_s)
    gp=$(echo "$G1" | num pp_tokens_per_s)
    g32=$(echo "$G32" | num tg_tokens_per_s)
    c1=$(echo "$C1" | num tg_tokens_per_s)
    cp=$(echo "$C1" | num pp_tokens_per_s)
    c32=$(echo "$C32" | num tg_tokens_per_s)
    roof=$(awk -v bw="$BW" -v b="$BYTES" -v t="${g1:-0}" \
      'BEGIN { r = bw * 1e9 / 2 / b; if (r > 0) printf "%.0f%%", 100 * t / r; else print "?" }')
    ROWS+=("$(printf '%-15s %-5s %9.1f %9.1f %9.1f %8s | %8.1f %8.1f %8.1f | %s' "$p" "$d" \
      "${g1:-0}" "${g32:-0}" "${gp:-0}" "$roof" "${c1:-0}" "${c32:-0}" "${cp:-0}" "$SAME")")
  done
done

# 4. Table (rows whose steps ran out of time show 0). Roofline: batch-1 decode reads every weight once per token, so its bound is
# (copy bandwidth / 2, the read rate) / model bytes tokens/s.
sum ""
sum "portable mode on the GPU (--gpu-layers all) vs CPU (deterministic, $THREADS threads); tokens/s"
sum "$(printf '%-15s %-5s %9s %9s %9s %8s | %8s %8s %8s | %s' model dtype 'gpu tg1' 'gpu tg32' \
  'gpu pp512' 'tg1/roof' 'cpu tg1' 'cpu tg32' 'cpu pp64' 'digest cpu=gpu')"
for r in "${ROWS[@]}"; do sum "$r"; done
sum ""
sum "total $(($(date +%s) - T0)) s"
# Exit 0: all tests passed and none skipped; 1: a test failed; 3: the GPU tests skipped.
[ "$GPU_RC" = 0 ] && [ "$CLI_RC" = 0 ] || exit 1
[ "$SKIPPED" = 0 ] || exit 3
