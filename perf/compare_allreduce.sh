#!/usr/bin/env bash
# Side-by-side AllReduce (float, sum, 4 ranks, one size) of PReCCL and its peers on this machine:
#   PReCCL   preccl-perf --ranks 4 (shared memory between local ranks)
#   OpenMPI  MPI_Allreduce with the shared-memory BTL (vader) and with the TCP BTL on loopback
#   Gloo     gloo::allreduce's ring (as PyTorch calls it) over Gloo's TCP transport on loopback
# Every run checks its result element by element; a run that fails or reports wrong values is marked
# FAILED and makes the script exit 1 (exit 2: all passed, but a binary was missing). Builds nothing: point BUILD at a configured build directory.
#
# Usage: BUILD=./build perf/compare_allreduce.sh [bytes]      (bytes default 64M; K/M/G suffixes)
# Env:   BUILD (default ./build), ITERS (20), WARMUP (5), NP (4), LOGDIR (default: a new /tmp dir),
#        RUN_TIMEOUT seconds per run (600).
set -u

BYTES=${1:-64M}
BUILD=${BUILD:-./build}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
NP=${NP:-4}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
LOGDIR=${LOGDIR:-$(mktemp -d /tmp/compare_allreduce.XXXXXX)}
mkdir -p "$LOGDIR"

PERF=$BUILD/perf/preccl-perf
MPI_BIN=$BUILD/perf/perf-mpi
GLOO_BIN=$BUILD/perf/perf-gloo
SIZE_ARGS=(-t allreduce -b "$BYTES" -e "$BYTES" -n "$ITERS" -w "$WARMUP")
# Nothing may leave loopback: the OOB channel and the TCP BTL are both pinned to lo.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np "$NP" --mca oob_tcp_if_include lo)

names=()
oop=()
ip=()
status=()
failed=0

# run NAME LOGFILE CMD...: runs one benchmark, records its out-of-place and in-place busbw.
run() {
  local name=$1 log=$2
  shift 2
  echo "== $name: $*" >&2
  local rc=0
  timeout "$RUN_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
  # The size row: first field numeric; busbw is column 8 (out-of-place) and 12 (in-place).
  local row
  row=$(awk '$1 ~ /^[0-9]+$/ { line = $0 } END { print line }' "$log")
  local b_oop b_ip
  b_oop=$(awk '{ print $8 }' <<<"$row")
  b_ip=$(awk '{ print $12 }' <<<"$row")
  local st=ok
  if [ "$rc" -ne 0 ] || ! grep -q '^# Out of bounds values : 0 OK' "$log" || [ -z "$row" ]; then
    st="FAILED(rc=$rc)"
    failed=1
    tail -n 5 "$log" | sed 's/^/   | /' >&2
  fi
  names+=("$name")
  oop+=("${b_oop:-n/a}")
  ip+=("${b_ip:-n/a}")
  status+=("$st")
}

missing=0
skip() {
  names+=("$1"); oop+=("n/a"); ip+=("n/a"); status+=("not built ($2)")
  missing=1
}

if [ -x "$PERF" ]; then
  run "PReCCL (shm)" "$LOGDIR/preccl.log" "$PERF" --ranks "$NP" -d float -o sum "${SIZE_ARGS[@]}"
else
  skip "PReCCL (shm)" "$PERF"
fi
if [ -x "$MPI_BIN" ] && command -v mpirun >/dev/null; then
  run "OpenMPI (vader shm)" "$LOGDIR/mpi_vader.log" "${MPIRUN[@]}" --mca btl vader,self "$MPI_BIN" "${SIZE_ARGS[@]}"
  run "OpenMPI (tcp lo)" "$LOGDIR/mpi_tcp.log" "${MPIRUN[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo \
    "$MPI_BIN" "${SIZE_ARGS[@]}"
else
  skip "OpenMPI (vader shm)" "$MPI_BIN"
  skip "OpenMPI (tcp lo)" "$MPI_BIN"
fi
if [ -x "$GLOO_BIN" ]; then
  run "Gloo (tcp lo)" "$LOGDIR/gloo.log" "$GLOO_BIN" --ranks "$NP" --ifaces lo "${SIZE_ARGS[@]}"
else
  skip "Gloo (tcp lo)" "$GLOO_BIN"
fi

ref=${ip[0]}
echo
echo "# AllReduce float sum, $NP ranks, $BYTES, $ITERS iters (+$WARMUP warmup); busbw in GB/s (nccl-tests"
echo "# definition, 2(n-1)/n x algbw); ratio = in-place busbw / PReCCL in-place busbw; logs in $LOGDIR"
printf '%-22s %12s %12s %10s  %s\n' "system" "busbw(oop)" "busbw(ip)" "ratio" "check"
for i in "${!names[@]}"; do
  ratio=n/a
  if [[ "$ref" =~ ^[0-9.]+$ && "${ip[$i]}" =~ ^[0-9.]+$ ]] && awk -v r="$ref" 'BEGIN { exit !(r > 0) }'; then
    ratio=$(awk -v a="${ip[$i]}" -v r="$ref" 'BEGIN { printf "%.2f", a / r }')
  fi
  printf '%-22s %12s %12s %10s  %s\n' "${names[$i]}" "${oop[$i]}" "${ip[$i]}" "$ratio" "${status[$i]}"
done
# 1: a run failed or found wrong values; 2: all runs passed but some system was not built.
[ "$failed" -ne 0 ] && exit 1
[ "$missing" -ne 0 ] && exit 2
exit 0
