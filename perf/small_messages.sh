#!/usr/bin/env bash
# Small-message AllReduce latency (in-place, float sum, microseconds) of PReCCL and its peers, side by side
# in one run, on this machine: 4, 8 and 16 ranks, 8 B to 64 KiB.
#   preccl shm          preccl-perf, shared memory (no agreement: one host)
#   preccl sock         PRECCL_SHM_DISABLE=1: loopback sockets, with the agreement as across hosts (a small
#                       AllReduce defers its commit to the next call)
#   preccl sock, commit       the same with PRECCL_DEFER_COMMIT=0: every call commits before it returns
#   preccl sock, no agreement PRECCL_RETRY=0: no commit, abort or retry
#   OpenMPI vader, OpenMPI tcp    MPI_Allreduce with the shared-memory BTL and with the TCP BTL on lo
#   Gloo ring (PyTorch's), Gloo halving_doubling   gloo::allreduce over its TCP transport on lo
# Every run checks its results; a failed run prints FAILED in its cells. Builds nothing.
#
# Usage: BUILD=./build perf/small_messages.sh [ranks...]      (default 4 8 16)
# Env:   BUILD (./build), ITERS (200), WARMUP (20), GLOO_ITERS (20: its calls take milliseconds here),
#        RUN_TIMEOUT seconds per run (600).
set -u
BUILD=${BUILD:-./build}
ITERS=${ITERS:-200}
WARMUP=${WARMUP:-20}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
RANKS=("$@")
[ ${#RANKS[@]} -eq 0 ] && RANKS=(4 8 16)
SIZES=(8 64 512 4096 32768 65536)
ARGS=(-t allreduce -b 8 -e 64K -f 2 -n "$ITERS" -w "$WARMUP")
GLOO_ARGS=(-t allreduce -b 8 -e 64K -f 2 -n "${GLOO_ITERS:-20}" -w 2)
LOG=$(mktemp -d /tmp/small_messages.XXXXXX)

# row NAME CMD...: one line of the table, the in-place time of every size in SIZES.
row() {
  local name=$1
  shift
  local out="$LOG/${n}_$(echo "$name" | tr -c 'a-zA-Z0-9' _).log" rc=0
  timeout "$RUN_TIMEOUT" "$@" >"$out" 2>&1 || rc=$?
  local ok=1
  if [ "$rc" -ne 0 ] || ! grep -q '^# Out of bounds values : 0 OK' "$out"; then ok=0; fi
  local line="| $n | $name |"
  for s in "${SIZES[@]}"; do
    local t
    t=$(awk -v s="$s" '$1 == s { print $10 }' "$out" | tail -1)
    [ "$ok" -eq 1 ] && line+=" ${t:-n/a} |" || line+=" FAILED |"
  done
  echo "$line"
}

echo "| ranks | system | 8 B | 64 B | 512 B | 4 KiB | 32 KiB | 64 KiB |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "${RANKS[@]}"; do
  MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$n" --mca oob_tcp_if_include lo)
  row "PReCCL shm" "$BUILD/perf/preccl-perf" --ranks "$n" -c 1 "${ARGS[@]}"
  row "OpenMPI vader" "${MPIRUN[@]}" --mca btl vader,self "$BUILD/perf/perf-mpi" "${ARGS[@]}"
  row "PReCCL sockets" env PRECCL_SHM_DISABLE=1 "$BUILD/perf/preccl-perf" --ranks "$n" -c 1 "${ARGS[@]}"
  row "PReCCL sockets, commit" env PRECCL_SHM_DISABLE=1 PRECCL_DEFER_COMMIT=0 "$BUILD/perf/preccl-perf" --ranks "$n" -c 1 "${ARGS[@]}"
  row "PReCCL sockets, no agreement" env PRECCL_SHM_DISABLE=1 PRECCL_RETRY=0 "$BUILD/perf/preccl-perf" --ranks "$n" -c 1 "${ARGS[@]}"
  row "OpenMPI tcp" "${MPIRUN[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo "$BUILD/perf/perf-mpi" "${ARGS[@]}"
  row "Gloo ring" "$BUILD/perf/perf-gloo" --ranks "$n" --ifaces lo "${GLOO_ARGS[@]}"
  row "Gloo halving_doubling" "$BUILD/perf/perf-gloo" --ranks "$n" --ifaces lo --algo halving_doubling "${GLOO_ARGS[@]}"
done
echo "logs: $LOG" >&2
