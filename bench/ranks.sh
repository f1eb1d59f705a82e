#!/bin/sh
# Pipeline over MPI ranks on this machine (docs/BENCHMARKS.md, "Over MPI ranks"): decode and
# prompt rates of one process against mpirun -np 2..4 over loopback TCP, interleaved, the bytes
# each hop of the ring carries per token, the aggregate rate of concurrent requests with and
# without micro-batches, and each rank's resident memory while serving.
#   bench/ranks.sh MODEL.gguf [ROUNDS] [TOKENS]      (needs build/tzero and build-mpi/tzero)
set -eu
MODEL=${1:?usage: bench/ranks.sh MODEL.gguf [ROUNDS] [TOKENS]}
ROUNDS=${2:-3}
TOKENS=${3:-64}
. "$(dirname "$0")/mpi_common.sh"
ARGS="-m $MODEL -p 'Once upon a time' -n $TOKENS -t 1 --json"
rate() { python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; r=j.get("ranks",{}); print("%-6s prompt %7.1f tok/s  decode %6.2f tok/s  %s  digest %s" % (sys.argv[1], t["prompt_tokens_per_s"], t["gen_tokens_per_s"], ("%d B per token per hop, layers from %s" % (r["bytes_per_row_per_hop"], r["first_layers"])) if r else "", j["logits_digest"]))' "$1"; }
for i in $(seq "$ROUNDS"); do
  eval "$ONE run $ARGS" 2>/dev/null | rate "one"
  for np in 2 3 4; do eval "$RUN -np $np $MPI run $ARGS" 2>/dev/null | rate "np $np"; done
done
# Micro-batches: C requests at once through the batched engine (bench -c: aggregate generation
# tokens/s once every request has its first token), one process at -t 1 and at -t 2 (the two
# cores the ranks use), and np 2 with one pass at a time (--micro-batches 1) against the default
# (one pass per rank in flight).
BARGS="-m $MODEL -p 16 -n $TOKENS -c 1 -c 2 -c 4 -r 1 --json"
for i in $(seq "$ROUNDS"); do
  eval "$ONE bench $BARGS -t 1" 2>/dev/null | conc "one process -t 1"
  eval "$ONE bench $BARGS -t 2" 2>/dev/null | conc "one process -t 2"
  eval "$RUN -np 2 $MPI bench $BARGS -t 1 --micro-batches 1" 2>/dev/null | conc "np 2, 1 pass in flight"
  eval "$RUN -np 2 $MPI bench $BARGS -t 1" 2>/dev/null | conc "np 2, 2 in flight"
done
# Resident memory of each rank while serving (VmRSS after the model is open).
for np in 2 4; do rss_of_ranks $np "" -m "$MODEL" -t 1 --ctx 256 --parallel 1; done
echo "one process: $(/usr/bin/time -f 'peak RSS %M kB' "$ONE" run -m "$MODEL" -p hi -n 1 -t 1 -c 256 2>&1 >/dev/null | tail -1)"
