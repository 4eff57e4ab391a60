#!/usr/bin/env bash
# Which of OpenMPI's coll_tuned algorithms, and of Gloo's AllReduce algorithms, runs fastest on a bed, per
# collective: one test-bed run per collective with its own choice and every forced algorithm as systems
# (perf/testbed/peers.py), then one table per collective (busbw in Mbit/s, in-place, every result
# checked). docs/results.md, "Peers at their best", was measured with it. Root (network namespaces).
#   perf/peer_algorithms.sh [SCENARIO] [OUT_DIR]
# Defaults: perf/scenarios/balanced.toml, /tmp/peer-algorithms. Env: BUILD (./build), ITERS (1),
# COLLECTIVES (allreduce reducescatter allgather broadcast reduce alltoall).
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${1:-perf/scenarios/balanced.toml}
OUT=${2:-/tmp/peer-algorithms}
BUILD=${BUILD:-./build}
ITERS=${ITERS:-1}
COLLECTIVES=${COLLECTIVES:-allreduce reducescatter allgather broadcast reduce alltoall}
for coll in $COLLECTIVES; do
  systems=$(python3 -c "import sys; from perf.testbed import peers; print(','.join(peers.candidates(sys.argv[1])))" "$coll")
  python3 -m perf.testbed run --scenario "$SCENARIO" --collectives "$coll" --systems "$systems" \
    --iters "$ITERS" --build "$BUILD" --out "$OUT/$coll" || echo "peer_algorithms: $coll: some leg failed (see $OUT/$coll)"
done
for coll in $COLLECTIVES; do
  python3 -m perf.testbed results-table --detail "$coll=$OUT/$coll"
done
