#!/usr/bin/env bash
# make load-test: `tzero serve` on the 110m preset (q8_0, made once) under LOAD_CLIENTS
# concurrent streaming clients for LOAD_SECONDS; reports p50/p99 latency and tokens/s
# (tests/load/load_test.mjs) and fails on any error other than 429/503 or a KV leak.
#
#   tests/load/run_load.sh TZERO_BIN
# Environment: LOAD_CLIENTS (64), LOAD_SECONDS (25), LOAD_MAX_TOKENS (32), LOAD_PARALLEL (16),
#   LOAD_THREADS (nproc), LOAD_MODEL (a GGUF file instead of the 110m preset),
#   LOAD_REPORT (JSON report path, default BUILD/load-report.json).
set -u -o pipefail
die() { echo "run_load: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: $0 TZERO_BIN"
[ -x "$1" ] || die "$1: not an executable (build tzero first)"
command -v node >/dev/null || die "node (>= 20) is needed"
HERE=$(cd "$(dirname "$0")" && pwd)
TZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BUILD_DIR=$(dirname "$TZ")
. "$HERE/../support/cached_model.sh"
MODEL=$(cached_model "$TZ" "${LOAD_MODEL:-}" "$BUILD_DIR/load-cache") || die "gen-model failed"
LOG="$BUILD_DIR/load-serve.log"
PARALLEL=${LOAD_PARALLEL:-16}
CLIENTS=${LOAD_CLIENTS:-64}
set -x
"$TZ" serve -m "$MODEL" --port 0 --parallel "$PARALLEL" --max-queue "$CLIENTS" \
  -t "${LOAD_THREADS:-$(nproc)}" --ctx 512 2>"$LOG" &
{ set +x; } 2>/dev/null
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
PORT=""
for _ in $(seq 1 600); do
  PORT=$(sed -n 's|^listening on http://[^:]*:\([0-9]*\)$|\1|p' "$LOG" | head -1)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; die "tzero serve exited"; }
  sleep 0.1
done
[ -n "$PORT" ] || die "tzero serve did not start: $(tail -3 "$LOG")"
echo "== serving $MODEL on port $PORT ($PARALLEL slots); $CLIENTS clients for ${LOAD_SECONDS:-25} s"
node "$HERE/load_test.mjs" --url "http://127.0.0.1:$PORT" --clients "$CLIENTS" \
  --seconds "${LOAD_SECONDS:-25}" --max-tokens "${LOAD_MAX_TOKENS:-32}" \
  --report "${LOAD_REPORT:-$BUILD_DIR/load-report.json}"
RC=$?
kill -TERM $PID
wait $PID
SRC=$?
trap - EXIT
[ $SRC -eq 0 ] || { echo "tzero serve exited $SRC"; tail -5 "$LOG"; exit 1; }
exit $RC
