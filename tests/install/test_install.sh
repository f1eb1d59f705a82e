#!/usr/bin/env bash
# `make install` works for a program that embeds the engine: installs this build into a scratch
# prefix, builds examples/embed against it with find_package(tzero) alone, runs it on a
# gen-model file, and checks that
#   - it generates and its logits digest equals `tzero run`'s for the same request;
#   - it neither links nor contains the HTTP library (cpp-httplib belongs to the tools).
# Usage: test_install.sh SOURCE_DIR BUILD_DIR [EXTRA_LINKER_FLAGS]
set -euo pipefail
src=$1
build=$2
ldflags=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
[ -x "$prefix/bin/tzero" ] || fail "no bin/tzero"
[ -f "$prefix/include/tzero/engine.h" ] && [ -f "$prefix/include/tzero/ops.h" ] || fail "no public headers"
lib=$(find "$prefix" -name libtzero.a | head -n 1)
[ -n "$lib" ] || fail "no libtzero.a"
config=$(find "$prefix" -name tzeroConfig.cmake | head -n 1)
[ -n "$config" ] && [ -f "$(dirname "$config")/tzeroConfigVersion.cmake" ] || fail "no CMake package"
echo "installed: bin/tzero, include/tzero/, ${lib#$prefix/}, ${config#$prefix/}"

cmake -S "$src/examples/embed" -B "$tmp/embed" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "examples/embed does not configure against the prefix"; }
cmake --build "$tmp/embed" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "examples/embed does not build"; }
embed=$tmp/embed/tzero_embed

"$prefix/bin/tzero" gen-model --preset tiny --dtype q8_0 --seed 5 -o "$tmp/tiny.gguf" >/dev/null
out=$("$embed" "$tmp/tiny.gguf" "Once upon a time" 8) || fail "tzero_embed exited $?"
echo "$out"
line=$(echo "$out" | tail -n 1)
[[ $line =~ ^8\ tokens\ \(length\),\ logits\ digest\ ([0-9a-f]{32})$ ]] || fail "unexpected last line: $line"
digest=${BASH_REMATCH[1]}
want=$("$prefix/bin/tzero" run -m "$tmp/tiny.gguf" -p "Once upon a time" -n 8 --json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["logits_digest"])')
[ "$digest" = "$want" ] || fail "embedded digest $digest, tzero run digest $want"
echo "digest equals tzero run's: $digest"

# (Counts, not `grep -q`: with pipefail, a grep that stops reading early fails the pipeline.)
ldd_hits=$(ldd "$embed" | grep -ci httplib || true)
[ "$ldd_hits" = 0 ] || fail "tzero_embed links the HTTP library: $(ldd "$embed" | grep -i httplib)"
nm_hits=$(nm -C "$embed" | grep -ci httplib || true)
[ "$nm_hits" = 0 ] || fail "tzero_embed contains $nm_hits httplib symbols"
cli_hits=$(nm -C "$prefix/bin/tzero" | grep -c 'httplib::' || true)
[ "$cli_hits" -gt 0 ] || fail "the check sees no httplib symbol even in bin/tzero (nm does not work here?)"
echo "tzero_embed: no httplib (ldd, nm -C); bin/tzero has $cli_hits httplib symbols"
