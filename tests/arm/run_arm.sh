#!/usr/bin/env bash
# make test-arm (docs/TESTING.md): the aarch64 cross build (cmake/aarch64-linux-gnu.cmake) run
# under qemu-user, compared with x86-64's bits. Usage: run_arm.sh ARM_BUILD_DIR X86_TZERO
#   1. kernel bit tests (KernelVariants.*, KernelCanon.*, the thread pool's, MoE and fast-mode
#      matmuls) on qemu's max CPU (neon, neon-dotprod, neon-i8mm), and the selection on
#      cortex-a76 (neon, neon-dotprod) and cortex-a53 (neon only; neon-dotprod refused);
#   2. the golden table (tests/data/golden_digests.tsv: the digests x86-64 computes) and its MoE
#      rows under every kernel set;
#   3. a few engine tests (RunGenerated for two presets and dtypes, Fingerprint.*, StopRules.*);
#   4. the x86-64 binary and the aarch64 binary side by side: digest and fingerprint equal.
# Prints what it ran and how long each part took; exits non-zero on the first failure. ARM_FULL=1
# adds the golden long rows at other thread counts and chunks (Golden.LongRowsDoNotDependOn...,
# five more minutes) and every KernelVariants test on the two smaller CPUs (two more).
set -euo pipefail
build="${1:?usage: run_arm.sh ARM_BUILD_DIR X86_TZERO}"
x86_tzero="${2:?usage: run_arm.sh ARM_BUILD_DIR X86_TZERO}"
qemu=(qemu-aarch64 -L /)
unit="$build/tests/tz_unit"
e2e="$build/tests/tz_e2e"
arm_tzero="$build/tzero"
t_all=$(date +%s)

part() {  # part NAME QEMU_CPU BINARY GTEST_FILTER
  local name="$1" cpu="$2" bin="$3" filter="$4" t0 rc=0 log
  t0=$(date +%s)
  log="$build/arm-check.$(echo "$name" | tr 'A-Z ,' 'a-z--' | tr -s '-').log"
  echo "== $name (QEMU_CPU=$cpu): $(basename "$bin") --gtest_filter='$filter'"
  QEMU_CPU="$cpu" "${qemu[@]}" "$bin" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1 || rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? from .* ran|Failure|kernel (variants|sets)|golden rows|MoE rows|Expected|Which is|actual" "$log" |
    sed 's/^/   /' || true
  echo "   $name: exit $rc, $(( $(date +%s) - t0 )) s (log: $log)"
  [ "$rc" = 0 ] || { echo "make test-arm: $name FAILED"; exit 1; }
}

echo "aarch64 build: $build ($(file -b "$arm_tzero" | cut -d, -f1-2))"
echo "emulator: $(qemu-aarch64 --version | head -1), ${qemu[*]}"

kernels="KernelVariants.*:KernelCanon.*:ThreadPool.*:ThreadPoolMatmul.*:MoeMatmul.*:MatmulFast.*"
part "kernel bit tests" max "$unit" "$kernels"
small="KernelVariants.SelectionHonoursChoiceAndRejectsUnknown:KernelVariants.MatmulEveryTypeEqualsScalarBits"
[ "${ARM_FULL:-0}" = 1 ] && small="KernelVariants.*"
part "kernel bit tests, dotprod CPU" cortex-a76 "$unit" "$small"
part "kernel bit tests, Advanced SIMD only" cortex-a53 "$unit" "$small"

# The selection paths: what each emulated CPU offers, and a refusal where the CPU lacks SDOT.
model="$build/arm-check-tiny-q8_0.gguf"
"${qemu[@]}" "$arm_tzero" gen-model --preset tiny --dtype q8_0 --seed 1 -o "$model" >/dev/null 2>&1
for cpu in max cortex-a76 cortex-a53; do
  echo "   QEMU_CPU=$cpu: --kernels auto chooses $(QEMU_CPU=$cpu "${qemu[@]}" "$arm_tzero" run -m "$model" \
    -n 1 -p a 2>&1 >/dev/null | grep -o 'kernels [a-z0-9-]*' | cut -d' ' -f2)"
done
if QEMU_CPU=cortex-a53 "${qemu[@]}" "$arm_tzero" run -m "$model" -n 1 -p a --kernels neon-dotprod \
     >/dev/null 2>"$build/arm-check.err"; then
  echo "make test-arm: --kernels neon-dotprod ran on a CPU without SDOT"; exit 1
fi
echo "   cortex-a53, --kernels neon-dotprod: $(cat "$build/arm-check.err")"

golden="Golden.TableCoversEveryTinyPresetAndDtype:Golden.EveryDigestIsTheTables:Golden.MoeRowsDoNotDependOnKernels"
[ "${ARM_FULL:-0}" = 1 ] && golden="Golden.*"
part "golden table" max "$e2e" "$golden"
part "engine tests" max "$e2e" \
  "*RunGenerated.DigestIdenticalAcrossThreadsAndChunks/tiny_q8_0:*RunGenerated.DigestIdenticalAcrossThreadsAndChunks/tiny_qwen2_q4_k:Fingerprint.*:StopRules.*"

# x86-64 and aarch64 side by side on the same file: the same digest and the same fingerprint
# (the fingerprint leaves the kernel variant out).
t0=$(date +%s)
prompt="the little dog saw a big tree and was happy when the sun came up"
for dtype in q8_0 q4_k f16; do
  m="$build/arm-check-tiny-$dtype.gguf"
  "$x86_tzero" gen-model --preset tiny --dtype "$dtype" --seed 1 -o "$m" >/dev/null 2>&1
  x=$("$x86_tzero" run -m "$m" -n 16 -t 2 -p "$prompt" --json)
  for k in neon neon-dotprod neon-i8mm scalar; do
    a=$("${qemu[@]}" "$arm_tzero" run -m "$m" -n 16 -t 2 --kernels "$k" -p "$prompt" --json)
    python3 - "$dtype" "$k" "$x" "$a" <<'PY'
import json, sys
dtype, k, x, a = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
same = all(x[f] == a[f] for f in ("logits_digest", "fingerprint", "text"))
print(f"   tiny/{dtype}: x86-64 auto vs aarch64 {k}: digest {a['logits_digest']}"
      f" fingerprint {a['fingerprint']} {'equal' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
  done
done
echo "   x86-64 vs aarch64: $(( $(date +%s) - t0 )) s"
echo "make test-arm: passed in $(( $(date +%s) - t_all )) s"
