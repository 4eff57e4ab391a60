// The device primitive on a CUDA block (gpu/block_lanes.cuh), one per block.
#include <cuda_runtime.h>

#include "reduce/dtype.h"
#include "gpu/block_lanes.cuh"
#include "gpu/gpu_prim.h"

namespace preccl::gpu {

namespace {

__global__ void primKernel(const DevPrim* prims, RedOp op, precclDataType_t t, size_t esz, const volatile int* abort,
                           uint64_t budgetNs, PrimStats* stats, int* ends) {
  BlockLanes lanes;
  PrimStats* st = &stats[blockIdx.x];  // the leader's counters (device memory: they are added atomically)
  if (lanes.leader()) *st = PrimStats{};
  const PrimEnd e = runPrim(lanes, prims[blockIdx.x], op, t, esz, abort, budgetNs, st);
  if (lanes.leader()) ends[blockIdx.x] = int(e);
}

}  // namespace

int launchPrims(const DevPrim* prims, int n, const RedOp& op, precclDataType_t t, const volatile int* abort,
                uint64_t budgetNs, PrimStats* stats, int* ends, void* stream) {
  const size_t esz = dtypeSize(t);
  if (n <= 0 || esz == 0) return cudaErrorInvalidValue;
  primKernel<<<n, 256, 0, static_cast<cudaStream_t>(stream)>>>(prims, op, t, esz, abort, budgetNs, stats, ends);
  return cudaGetLastError();
}

}  // namespace preccl::gpu
