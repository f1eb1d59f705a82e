#!/usr/bin/env bash
# make replica-test: three `tzero serve` replicas behind HAProxy on loopback, checked by
# tests/replica/replica_test.py (docs/REPLICAS.md). Bounded: REPLICA_TIMEOUT seconds (600).
# The model: the 110m preset (q8_0, made once under BUILD/replica-cache; slow enough on one
# thread that a replica can be killed mid-stream), or REPLICA_MODEL.
#
#   tests/replica/run_replica.sh TZERO_BIN
set -u -o pipefail
die() { echo "run_replica: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: $0 TZERO_BIN"
[ -x "$1" ] || die "$1: not an executable (build tzero first)"
command -v haproxy >/dev/null ||
  die "haproxy is needed (Debian: apt-get install haproxy; \`make replica-test\` installs it)"
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 is needed"
HERE=$(cd "$(dirname "$0")" && pwd)
TZ=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BUILD_DIR=$(dirname "$TZ")
. "$HERE/../support/cached_model.sh"
MODEL=$(cached_model "$TZ" "${REPLICA_MODEL:-}" "$BUILD_DIR/replica-cache") || die "gen-model failed"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tzero-replica.XXXXXX")
echo "== $(haproxy -v | head -1)"
timeout --kill-after=10 "${REPLICA_TIMEOUT:-600}" /usr/bin/python3 "$HERE/replica_test.py" "$TZ" "$MODEL" "$WORK"
RC=$?
[ $RC -eq 124 ] && echo "FAIL: timed out after ${REPLICA_TIMEOUT:-600} s"
if [ $RC -eq 0 ]; then rm -rf "$WORK"; else echo "logs kept in $WORK"; fi
exit $RC
