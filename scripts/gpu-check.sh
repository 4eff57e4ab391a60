#!/usr/bin/env bash
# The GPU suite for a session that is lent a GPU (docs/gpu.md). Two steps, so that the device's minutes
# go to running, not compiling:
#   scripts/gpu-check.sh build    # here (nvcc needs no GPU): build-gpu/ with the suite and its libraries
#   scripts/gpu-check.sh run      # on the device machine, with build-gpu carried there; logs to $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  build)
    cmake -S . -B build-gpu -DPRECCL_BUILD_PERF=OFF -DPRECCL_BUILD_TORCH=OFF >/dev/null
    cmake --build build-gpu -j2 --target gpu-reduce-test gpu-task-test gpu-exec-test nccl-gpu-app
    # The shared libraries the device machine may lack (it is not set up like this one).
    mkdir -p build-gpu/lib
    { ldd build-gpu/tests/gpu-*-test build-gpu/nccl/libnccl.so.2 | awk '/=> \// {print $3}' |
        grep -E 'libfmt|libhwloc|libudev' || true; } | sort -u | xargs -r -I{} cp -L {} build-gpu/lib/
    du -sh build-gpu/tests/gpu-*-test build-gpu/tests/nccl-gpu-app build-gpu/nccl build-gpu/lib
    ;;
  run)
    out=${OUT:-/tmp}
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi"; } |
      tee "$out/gpu.log"
    # Each with its own limit, 560 s in all (the device tool's command limit is 600 s).
    for t in "60 gpu-reduce-test" "60 gpu-task-test" "100 gpu-exec-test --quick" "100 nccl-gpu-app" "240 gpu-exec-test"; do
      set -- $t
      limit=$1
      shift
      LD_LIBRARY_PATH=$PWD/build-gpu/lib:$PWD/build-gpu/nccl timeout "$limit" build-gpu/tests/"$@" 2>&1 |
        tee -a "$out/gpu.log" || echo "EXIT $? from $*" | tee -a "$out/gpu.log"
    done
    ;;
  *)
    echo "usage: $0 build|run" >&2
    exit 2
    ;;
esac
