#!/usr/bin/env bash
# Rewrites the key tables at the end of docs/MODELS.md (from its "## `llama`" heading on) with
# `tzero info --keys ARCH` of every architecture; ModelKeys.DocsHoldEveryTable checks them.
#   scripts/models_doc_tables.sh build/tzero
set -euo pipefail
TZ=${1:?usage: $0 TZERO_BIN}
DOC=$(cd "$(dirname "$0")/.." && pwd)/docs/MODELS.md
head=$(awk '/^## `llama`$/ { exit } { print }' "$DOC")
{
  printf '%s\n' "$head"
  for a in llama qwen2 qwen3 qwen2moe qwen3moe gemma2 gemma3 phi3 gpt-oss glm4moe deepseek2 qwen3next \
    qwen35 qwen35moe nemotron_h; do
    printf '## `%s`\n\n' "$a"
    "$TZ" info --keys "$a"
    echo
  done
} >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
