#!/bin/sh
# A tzero binary with the example's kernels linked in (tzero_with_my_kernels) sees them by name:
# check-op gives each its verdict, `run --op matmul.f32=canonical_x4` gives the plain binary's
# text and logits digest, and the fingerprint names the custom kernel. The plain binary does not
# know the names. Usage: custom_kernel_binary.sh TZERO_WITH_KERNELS TZERO MODEL_F32.gguf
set -u
mine=$1 plain=$2 model=$3
fail() { echo "FAIL: $*"; exit 1; }
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

out=$("$mine" check-op --op matmul.f32 --name canonical_x4) || fail "canonical_x4: exit $?: $out"
echo "$out" | grep -q "identical to the reference" || fail "canonical_x4 verdict: $out"
out=$("$mine" check-op --op matmul.f32 --name batch_dependent)
[ $? -eq 1 ] || fail "batch_dependent must exit 1: $out"
echo "$out" | grep -q "UNSTABLE" || fail "batch_dependent verdict: $out"
"$plain" check-op --op matmul.f32 --name canonical_x4 >/dev/null 2>&1
[ $? -eq 2 ] || fail "the plain binary must not know canonical_x4"

a=$("$plain" run -m "$model" -p "Once upon a time" -n 12 -t 2 --json) || fail "plain run"
b=$("$mine" run -m "$model" -p "Once upon a time" -n 12 -t 2 --op matmul.f32=canonical_x4 --json) ||
  fail "run --op"
da=$(echo "$a" | field logits_digest) db=$(echo "$b" | field logits_digest)
[ -n "$da" ] && [ "$da" = "$db" ] || fail "logits digests differ: $da vs $db"
[ "$(echo "$a" | field text)" = "$(echo "$b" | field text)" ] || fail "texts differ"
echo "$b" | grep -q '"custom_ops":\["matmul.f32=canonical_x4"\]' || fail "fingerprint lacks custom_ops"
[ "$(echo "$a" | field fingerprint)" != "$(echo "$b" | field fingerprint)" ] ||
  fail "a custom kernel must change the fingerprint"
# Every command that computes honours --op (cli/compute_flags.h): the fingerprint command, bench
# and the audit name it; a sequential kernel changes the bits but the audit's contract holds.
fp=$("$mine" fingerprint -m "$model" --op matmul.f32=canonical_x4 --json) || fail "fingerprint --op"
[ "$(echo "$fp" | sed -n 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/p')" = "$(echo "$b" | field fingerprint)" ] ||
  fail "tzero fingerprint --op differs from run --op's"
out=$("$mine" bench -m "$model" -p 8 -n 2 -r 1 --op matmul.f32=canonical_x4) || fail "bench --op"
echo "$out" | grep -q "kernels [a-z0-9-]* matmul.f32=canonical_x4" || fail "bench kernels: $out"
out=$("$mine" audit -m "$model" -n 3 --timing-runs 0 --op matmul.f32=sequential 2>&1) ||
  fail "audit --op: $out"
echo "$out" | grep -q "contract holds" || fail "audit --op: $out"
echo "PASS: digest $da with the linked-in kernel"
