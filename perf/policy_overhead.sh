#!/usr/bin/env bash
# The control overhead of the adaptive policy on equal paths: preccl-perf with PRECCL_POLICY=static and
# =preccl, alternated ROUNDS times (static, preccl, static, preccl, ...) so that drifts of the machine hit
# both alike, for ring and tree AllReduce (and any other -t), over shared memory and over TCP on loopback.
# Prints per configuration the mean busbw of each policy (in-place and out-of-place blocks together) and
# the ratio preccl / static. Builds nothing: point BUILD at a configured build directory.
# On a virtual machine the hypervisor takes CPU time at times ("steal", /proc/stat): a run that lost some
# is slower for reasons of neither policy. Each run's steal is measured; the table gives the largest,
# and the ratio again over the rounds whose two runs both had less than STEAL_MAX (default 0.02).
#
# Usage: BUILD=./build perf/policy_overhead.sh [bytes]     (default 64M)
# Env:   BUILD (./build), NP (4), ITERS (10), WARMUP (3), ROUNDS (3), COLLS ("allreduce"),
#        ALGOS ("ring tree"), TRANSPORTS ("shm socket"), STEAL_MAX (0.02)
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
STEAL_MAX=${STEAL_MAX:-0.02}
PERF=$BUILD/perf/preccl-perf
[ -x "$PERF" ] || { echo "policy_overhead: $PERF not built" >&2; exit 2; }

# "steal total" jiffies of the whole machine (/proc/stat's cpu line: steal is its 8th field).
jiffies() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9 && i <= NF; i++) t += $i; print (NF >= 9 ? $9 : 0), t }' /proc/stat; }

# One run; prints "oop ip steal": busbw (GB/s) of the size row and the fraction of the CPU the hypervisor
# took meanwhile, or fails.
run() {  # policy algo transport coll
  local shm=0
  [ "$3" = socket ] && shm=1
  local out j0 j1
  j0=$(jiffies)
  out=$(PRECCL_POLICY=$1 PRECCL_ALGO=$2 PRECCL_SHM_DISABLE=$shm PRECCL_SOCKET_IFNAME=lo \
        timeout 600 "$PERF" --ranks "$NP" -t "$4" -b "$BYTES" -e "$BYTES" -n "$ITERS" -w "$WARMUP" -c 0 2>&1) || {
    echo "policy_overhead: run failed ($*):" >&2; echo "$out" | tail -5 >&2; return 1; }
  j1=$(jiffies)
  echo "$out" | awk -v j0="$j0" -v j1="$j1" '$1 ~ /^[0-9]+$/ && NF >= 12 { bw = $8 " " $12; found = 1 }
    END { if (!found) exit 1; split(j0, a, " "); split(j1, b, " "); d = b[2] - a[2]
          printf "%s %.4f\n", bw, (d > 0 ? (b[1] - a[1]) / d : 0) }'
}

smax=$(awk -v m="$STEAL_MAX" 'BEGIN { printf "%g %%", m * 100 }')
echo "| collective | algorithm | transport | static busbw (GB/s) | preccl busbw (GB/s) | preccl / static | largest steal | rounds with steal < $smax | their preccl / static |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
status=0
for coll in $COLLS; do
  for algo in $ALGOS; do
    [ "$algo" = tree ] && [ "$coll" != allreduce ] && continue
    for tr in $TRANSPORTS; do
      rounds=""
      for ((i = 0; i < ROUNDS; i++)); do
        s=$(run static "$algo" "$tr" "$coll") || { status=1; continue 2; }
        p=$(run preccl "$algo" "$tr" "$coll") || { status=1; continue 2; }
        rounds+="$s $p"$'\n'
      done
      # A round: static's "oop ip steal", then preccl's.
      printf '%s' "$rounds" | awk -v c="$coll" -v al="$algo" -v t="$tr" -v max="$STEAL_MAX" '
        NF == 6 { s += $1 + $2; p += $4 + $5; n += 2; st = ($3 > $6 ? $3 : $6); if (st > top) top = st
                  if (st < max) { qs += $1 + $2; qp += $4 + $5; q++ } ; r++ }
        END { printf "| %s | %s | %s | %.3f | %.3f | %.4f | %.1f %% | %d of %d | %s |\n", c, al, t, s / n, p / n,
                     (s > 0 ? p / s : 0), top * 100, q, r, (q > 0 && qs > 0 ? sprintf("%.4f", qp / qs) : "-") }'
    done
  done
done
exit $status
