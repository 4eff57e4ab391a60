// The CCT's kernel: block i runs task i of the run (exec/lane_loop.h) on its threads, until it ends or the
// host's flag stops it.
#include <cuda_runtime.h>

#include "exec/lane_loop.h"
#include "gpu/block_lanes.cuh"
#include "gpu/gpu_plan.h"

namespace preccl::gpu {

namespace {

__global__ void planKernel(Run run, const int* stop) {
  BlockLanes lanes;
  if (run.startNs == 0) run.startNs = lanes.nowNs();
  laneLoop(lanes, run, int(blockIdx.x), stop);
}

}  // namespace

constexpr int kThreads = 256;

int launchPlan(const Run& run, const int* stop, void* stream) {
  if (run.ntasks <= 0) return cudaSuccess;
  planKernel<<<run.ntasks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(run, stop);
  return cudaGetLastError();
}

int residentPlanBlocks() {
  int dev = 0, sms = 0, perSm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, planKernel, kThreads, 0) != cudaSuccess)
    return 0;
  return sms * perSm;
}

}  // namespace preccl::gpu
