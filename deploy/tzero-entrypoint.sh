#!/bin/sh
# Entry point of the image (deploy/Dockerfile) and of the systemd unit (deploy/tzero.service):
# runs `tzero "$@"` and, for `serve`, hands it the API key from the environment, so that no key is
# ever written into an image, a unit file or a manifest:
#   TZERO_API_KEY       the key itself (systemd EnvironmentFile, `docker run -e`, a Secret as env)
#   TZERO_API_KEY_FILE  a file holding it (Docker/Kubernetes secrets mounted as files)
# Without either, `serve` runs without a key and says so on stderr (docs/DEPLOY.md).
# TZERO_BIN overrides the binary (the test, tests/deploy/test_entrypoint.sh, uses a stub).
# `exec`: tzero replaces this shell, so it is PID 1 / the unit's main process and gets SIGTERM.
set -eu
bin="${TZERO_BIN:-/usr/local/bin/tzero}"
key="${TZERO_API_KEY:-}"
if [ -n "${TZERO_API_KEY_FILE:-}" ]; then
  if [ -n "$key" ]; then
    echo "tzero-entrypoint: set TZERO_API_KEY or TZERO_API_KEY_FILE, not both" >&2
    exit 2
  fi
  key=$(cat "$TZERO_API_KEY_FILE")  # $(...) drops the file's trailing newline
  [ -n "$key" ] || { echo "tzero-entrypoint: $TZERO_API_KEY_FILE is empty" >&2; exit 2; }
fi
unset TZERO_API_KEY TZERO_API_KEY_FILE
if [ "${1:-}" = serve ]; then
  shift
  if [ -n "$key" ]; then
    # Through tzero's own environment (TZERO_API_KEY), not argv: argv is readable by every
    # local user through /proc, the environment only by the same user.
    TZERO_API_KEY="$key" exec "$bin" serve "$@"
  fi
  echo "tzero-entrypoint: no TZERO_API_KEY: any client that reaches the port can use the server" >&2
  exec "$bin" serve "$@"
fi
exec "$bin" "$@"
