# Sourced by bench/ranks.sh and bench/experts.sh: the binaries, mpirun over loopback TCP, and the
# helpers both print with.
ONE=${TZ_BINARY:-build/tzero}
MPI=${TZERO_MPI_BINARY:-build-mpi/tzero}
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
RUN="/usr/bin/mpirun $ROOT --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
# bench -c's JSON on stdin -> one line: each concurrency's aggregate generation tok/s.
conc() { python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-28s %s" % (sys.argv[1], "  ".join("C=%d %6.2f tok/s" % (r["concurrency"], r["tg_tokens_per_s"]) for r in j["concurrency"])))' "$1"; }
# rss_of_ranks NP LABEL ARGS...: each rank's VmRSS once `tzero serve ARGS` under mpirun listens.
rss_of_ranks() {
  np=$1 label=$2
  shift 2
  $RUN -np "$np" "$MPI" serve "$@" --port 0 2>/tmp/ranks_rss.err &
  pid=$!
  for _ in $(seq 600); do grep -q "listening on" /tmp/ranks_rss.err && break; sleep 0.1; done
  for p in $(pgrep -P $pid); do
    r=$(tr '\0' '\n' < /proc/$p/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    echo "np $np $label rank $r: $(grep VmRSS /proc/$p/status | tr -s ' ')"
  done | sort
  kill -TERM $pid; wait $pid 2>/dev/null || true
}
