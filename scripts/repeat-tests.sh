#!/usr/bin/env bash
# Runs a Catch2 test spec of preccl-tests N times in a row and stops at the first failure: how a rare
# failure is found (and how "passes N times in a row" is shown). Logs go to $LOGDIR (default /tmp).
#   scripts/repeat-tests.sh 50 "[teardown]"
#   BIN=build-dev/tests/preccl-tests scripts/repeat-tests.sh 20 "collectives socket tree"
set -uo pipefail
n=${1:?usage: repeat-tests.sh N SPEC}
spec=${2:?usage: repeat-tests.sh N SPEC}
bin=${BIN:-build/tests/preccl-tests}
logdir=${LOGDIR:-/tmp}
for i in $(seq 1 "$n"); do
  log="$logdir/repeat-tests.$i.log"
  start=$(date +%s)
  if ! "$bin" "$spec" --durations yes >"$log" 2>&1; then
    echo "run $i of $n FAILED after $(( $(date +%s) - start )) s (log: $log)"
    exit 1
  fi
  echo "run $i of $n passed in $(( $(date +%s) - start )) s"
  rm -f "$log"
done
echo "$n of $n runs passed: $spec"
