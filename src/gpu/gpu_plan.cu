// The CCT's kernel: block i runs task i of the compiled plan (gpu/dev_task.h) on its threads.
#include <cuda_runtime.h>

#include "gpu/block_lanes.cuh"
#include "exec/dev_task.h"
#include "gpu/gpu_plan.h"

namespace preccl::gpu {

namespace {

__global__ void planKernel(DevPlan plan) {
  BlockLanes lanes;
  if (plan.startNs == 0) plan.startNs = lanes.nowNs();
  const TaskEnd e = runTask(lanes, plan, int(blockIdx.x));
  if (lanes.leader()) {
    plan.ends[blockIdx.x] = e;
    if (e.end != 0 && plan.failed) {
      // The host watches this flag (mapped memory) and raises the abort the other blocks poll.
      *reinterpret_cast<volatile int*>(plan.failed) = 1;
      __threadfence_system();
    }
  }
}

}  // namespace

constexpr int kThreads = 256;

int launchPlan(const DevPlan& plan, void* stream) {
  if (plan.ntasks <= 0) return cudaSuccess;
  planKernel<<<plan.ntasks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(plan);
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
