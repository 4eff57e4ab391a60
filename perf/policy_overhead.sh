#!/usr/bin/env bash
# The control overhead of the adaptive policy on equal paths: preccl-perf with PRECCL_POLICY=static and
# =preccl, alternated ROUNDS times (static, preccl, static, preccl, ...) so that drifts of the machine hit
# both alike, for ring and tree AllReduce (and any other -t), over shared memory and over TCP on loopback.
# Prints per configuration the mean busbw of each policy (in-place and out-of-place blocks together) and
# the ratio preccl / static. Builds nothing: point BUILD at a configured build directory.
#
# Usage: BUILD=./build perf/policy_overhead.sh [bytes]     (default 64M)
# Env:   BUILD (./build), NP (4), ITERS (10), WARMUP (3), ROUNDS (3), COLLS ("allreduce"),
#        ALGOS ("ring tree"), TRANSPORTS ("shm socket")
set -u
BYTES=${1:-64M}
BUILD=${BUILD:-./build}
NP=${NP:-4}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-3}
COLLS=${COLLS:-allreduce}
ALGOS=${ALGOS:-ring tree}
TRANSPORTS=${TRANSPORTS:-shm socket}
PERF=$BUILD/perf/preccl-perf
[ -x "$PERF" ] || { echo "policy_overhead: $PERF not built" >&2; exit 2; }

# One run; prints "oop ip" busbw (GB/s) of the size row, or fails.
run() {  # policy algo transport coll
  local shm=0
  [ "$3" = socket ] && shm=1
  local out
  out=$(PRECCL_POLICY=$1 PRECCL_ALGO=$2 PRECCL_SHM_DISABLE=$shm PRECCL_SOCKET_IFNAME=lo \
        timeout 600 "$PERF" --ranks "$NP" -t "$4" -b "$BYTES" -e "$BYTES" -n "$ITERS" -w "$WARMUP" -c 0 2>&1) || {
    echo "policy_overhead: run failed ($*):" >&2; echo "$out" | tail -5 >&2; return 1; }
  echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 12 { print $8, $12; found=1 } END { exit !found }'
}

echo "| collective | algorithm | transport | static busbw (GB/s) | preccl busbw (GB/s) | preccl / static |"
echo "| --- | --- | --- | --- | --- | --- |"
status=0
for coll in $COLLS; do
  for algo in $ALGOS; do
    [ "$algo" = tree ] && [ "$coll" != allreduce ] && continue
    for tr in $TRANSPORTS; do
      s_sum=0; p_sum=0; n=0
      for ((i = 0; i < ROUNDS; i++)); do
        s=$(run static "$algo" "$tr" "$coll") || { status=1; continue 2; }
        p=$(run preccl "$algo" "$tr" "$coll") || { status=1; continue 2; }
        s_sum=$(awk -v a="$s_sum" -v b="$s" 'BEGIN { split(b, x, " "); print a + x[1] + x[2] }')
        p_sum=$(awk -v a="$p_sum" -v b="$p" 'BEGIN { split(b, x, " "); print a + x[1] + x[2] }')
        n=$((n + 2))
      done
      awk -v c="$coll" -v al="$algo" -v t="$tr" -v s="$s_sum" -v p="$p_sum" -v n="$n" \
        'BEGIN { printf "| %s | %s | %s | %.3f | %.3f | %.4f |\n", c, al, t, s / n, p / n, (s > 0 ? p / s : 0) }'
    done
  done
done
exit $status
