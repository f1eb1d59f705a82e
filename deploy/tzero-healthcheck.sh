#!/bin/bash
# The image's HEALTHCHECK: GET /health (it needs no API key) through bash's /dev/tcp, so the
# image carries no curl. Healthy iff the status line is 200: /health answers 503 while the server
# shuts down, and nothing listens while the model loads (the HEALTHCHECK's start period covers it).
# TZERO_HEALTH_HOST / TZERO_HEALTH_PORT: where `serve` listens (default 127.0.0.1:8080).
set -eu
host="${TZERO_HEALTH_HOST:-127.0.0.1}"
port="${TZERO_HEALTH_PORT:-8080}"
exec 3<>"/dev/tcp/$host/$port"
# HTTP/1.0 without Host: the server accepts it with or without --api-key (docs/SERVER.md).
printf 'GET /health HTTP/1.0\r\n\r\n' >&3
IFS= read -r -t 5 status <&3 || { echo "unhealthy: no answer" >&2; exit 1; }
case "$status" in
  "HTTP/1."?" 200 "*) exit 0 ;;
  *) echo "unhealthy: ${status%$'\r'}" >&2; exit 1 ;;
esac
