#!/bin/sh
# Expert parallelism over MPI ranks on this machine (docs/BENCHMARKS.md, "Over MPI ranks"): a
# MoE model's decode rate and the aggregate rate of concurrent requests, one process against
# mpirun -np 2 with the layers split (pipeline only) and with --expert-parallel, interleaved;
# the bytes rank 0's layers sent for experts per token; each rank's resident memory serving.
#   bench/experts.sh MOE_MODEL.gguf [ROUNDS] [TOKENS]   (needs build/tzero and build-mpi/tzero)
set -eu
MODEL=${1:?usage: bench/experts.sh MOE_MODEL.gguf [ROUNDS] [TOKENS]}
ROUNDS=${2:-2}
TOKENS=${3:-32}
. "$(dirname "$0")/mpi_common.sh"
ARGS="-m $MODEL -p 'Once upon a time' -n $TOKENS -t 1 --json"
rate() { python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; x=j.get("ranks",{}).get("experts"); print("%-28s prompt %7.1f tok/s  decode %6.2f tok/s  %s digest %s" % (sys.argv[1], t["prompt_tokens_per_s"], t["gen_tokens_per_s"], ("experts: %d slots, %d bytes from rank 0 (experts from %s)" % (x["slots"], x["bytes"], x["first"])) if x else "", j["logits_digest"]))' "$1"; }
BARGS="-m $MODEL -p 16 -n $TOKENS -c 1 -c 4 -r 1 --json"
for i in $(seq "$ROUNDS"); do
  eval "$ONE run $ARGS" 2>/dev/null | rate "one process -t 1"
  eval "$RUN -np 2 $MPI run $ARGS" 2>/dev/null | rate "np 2, layers split"
  eval "$RUN -np 2 $MPI run $ARGS --expert-parallel" 2>/dev/null | rate "np 2, --expert-parallel"
  eval "$RUN -np 3 $MPI run $ARGS --expert-parallel" 2>/dev/null | rate "np 3, --expert-parallel"
done
for i in $(seq "$ROUNDS"); do
  eval "$ONE bench $BARGS -t 1" 2>/dev/null | conc "one process -t 1"
  eval "$ONE bench $BARGS -t 2" 2>/dev/null | conc "one process -t 2"
  eval "$RUN -np 2 $MPI bench $BARGS -t 1" 2>/dev/null | conc "np 2, layers split"
  eval "$RUN -np 2 $MPI bench $BARGS -t 1 --expert-parallel" 2>/dev/null | conc "np 2, --expert-parallel"
done
# Resident memory of each rank while serving (VmRSS after the model is open).
for np in 2 3; do
  rss_of_ranks $np "layers split" -m "$MODEL" -t 1 --ctx 256 --parallel 1
  rss_of_ranks $np "--expert-parallel" -m "$MODEL" -t 1 --ctx 256 --parallel 1 --expert-parallel
done
