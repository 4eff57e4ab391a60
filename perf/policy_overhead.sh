#!/usr/bin/env bash
# The control overhead of the adaptive policy on equal paths: preccl-perf with PRECCL_POLICY=static and
# =preccl, alternated ROUNDS times (static, preccl, static, preccl, ...) so that drifts of the machine hit
# both alike, for ring and tree AllReduce (and any other -t), over shared memory and over TCP on loopback.
# Prints per configuration the mean busbw of each policy (in-place and out-of-place blocks together), the
# ratio preccl / static (from the calls' times, which preccl-perf prints to the microsecond, where its
# busbw has two decimals: 0.7 % at 1.5 GB/s), and the 95 % confidence interval of that ratio over the
# rounds (Student's t on the per-round ratios): the machine's noise, stated, instead of one ratio that
# may or may not be it. Builds nothing: point BUILD at a configured build directory.
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

# One run; prints "oop ip steal oopUs ipUs": busbw (GB/s) of the size row, the fraction of the CPU the
# hypervisor took meanwhile, and the two blocks' times per call (us), or fails.
run() {  # policy algo transport coll
  local shm=0
  [ "$3" = socket ] && shm=1
  local out j0 j1
  j0=$(jiffies)
  out=$(PRECCL_POLICY=$1 PRECCL_ALGO=$2 PRECCL_SHM_DISABLE=$shm PRECCL_SOCKET_IFNAME=lo \
        timeout 600 "$PERF" --ranks "$NP" -t "$4" -b "$BYTES" -e "$BYTES" -n "$ITERS" -w "$WARMUP" -c 0 2>&1) || {
    echo "policy_overhead: run failed ($*):" >&2; echo "$out" | tail -5 >&2; return 1; }
  j1=$(jiffies)
  echo "$out" | awk -v j0="$j0" -v j1="$j1" '$1 ~ /^[0-9]+$/ && NF >= 12 { bw = $8 " " $12; us = $6 " " $10; found = 1 }
    END { if (!found) exit 1; split(j0, a, " "); split(j1, b, " "); d = b[2] - a[2]
          printf "%s %.4f %s\n", bw, (d > 0 ? (b[1] - a[1]) / d : 0), us }'
}

smax=$(awk -v m="$STEAL_MAX" 'BEGIN { printf "%g %%", m * 100 }')
echo "| collective | algorithm | transport | static busbw (GB/s) | preccl busbw (GB/s) | preccl / static | 95 % interval over the rounds | largest steal | rounds with steal < $smax | their preccl / static |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
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
      # A round: static's "oop ip steal oopUs ipUs", then preccl's. Ratios are static's time over preccl's
      # for the same calls (= busbw preccl / static).
      printf '%s' "$rounds" | awk -v c="$coll" -v al="$algo" -v t="$tr" -v max="$STEAL_MAX" '
        # Two-sided 95 % quantile of Student t with df degrees of freedom (1.96 beyond the table).
        function tq(df) { split("12.71 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 " \
                                "2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 " \
                                "2.052 2.048 2.045 2.042", tt, " "); return df <= 30 ? tt[df] : 1.96 }
        NF == 10 { s += $1 + $2; p += $6 + $7; n += 2; ts += $4 + $5; tp += $9 + $10
                   st = ($3 > $8 ? $3 : $8); if (st > top) top = st
                   x = ($4 + $5) / ($9 + $10); r++; sx += x; sxx += x * x
                   if (st < max) { qs += $4 + $5; qp += $9 + $10; q++ } }
        END { ci = "-"
              if (r > 1) { m = sx / r; v = (sxx - r * m * m) / (r - 1); h = tq(r - 1) * sqrt(v > 0 ? v : 0) / sqrt(r)
                           ci = sprintf("%.4f +- %.4f", m, h) }
              printf "| %s | %s | %s | %.3f | %.3f | %.4f | %s | %.1f %% | %d of %d | %s |\n", c, al, t, s / n, p / n,
                     (tp > 0 ? ts / tp : 0), ci, top * 100, q, r, (q > 0 && qp > 0 ? sprintf("%.4f", qs / qp) : "-") }'
    done
  done
done
exit $status
