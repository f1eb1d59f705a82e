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
ONE=${TZ_BINARY:-build/tzero}
MPI=${TZERO_MPI_BINARY:-build-mpi/tzero}
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
RUN="/usr/bin/mpirun $ROOT --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
ARGS="-m $MODEL -p 'Once upon a time' -n $TOKENS -t 1 --json"
rate() { python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; x=j.get("ranks",{}).get("experts"); n=t.get("gen_tokens",0) or 1; print("%-28s prompt %7.1f tok/s  decode %6.2f tok/s  %s digest %s" % (sys.argv[1], t["prompt_tokens_per_s"], t["gen_tokens_per_s"], ("experts: %d slots, %d bytes from rank 0 (experts from %s)" % (x["slots"], x["bytes"], x["first"])) if x else "", j["logits_digest"]))' "$1"; }
BARGS="-m $MODEL -p 16 -n $TOKENS -c 1 -c 4 -r 1 --json"
conc() { python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-28s %s" % (sys.argv[1], "  ".join("C=%d %6.2f tok/s" % (r["concurrency"], r["tg_tokens_per_s"]) for r in j["concurrency"])))' "$1"; }
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
for ep in "" --expert-parallel; do
  for np in 2 3; do
    $RUN -np $np "$MPI" serve -m "$MODEL" -t 1 --port 0 --ctx 256 --parallel 1 $ep 2>/tmp/experts_rss.err &
    pid=$!
    for _ in $(seq 600); do grep -q "listening on" /tmp/experts_rss.err && break; sleep 0.1; done
    for p in $(pgrep -P $pid); do
      r=$(tr '\0' '\n' < /proc/$p/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
      echo "np $np ${ep:-layers split} rank $r: $(grep VmRSS /proc/$p/status | tr -s ' ')"
    done | sort
    kill -TERM $pid; wait $pid 2>/dev/null || true
  done
done
