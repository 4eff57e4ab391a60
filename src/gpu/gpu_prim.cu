// The device primitive on a CUDA block: thread 0 waits on the FIFOs (and counts the stalls), every
// thread moves the piece's elements, a system-scope fence and a barrier before the slot is published.
#include <cuda_runtime.h>

#include "device/dtype.h"
#include "gpu/gpu_prim.h"

namespace preccl::gpu {

namespace {

struct BlockLanes {
  __device__ bool leader() const { return threadIdx.x == 0; }
  __device__ size_t id() const { return threadIdx.x; }
  __device__ size_t count() const { return blockDim.x; }
  // The piece's bytes, written by every thread, are visible wherever the FIFO's consumer is (another
  // block, another GPU, the host) before thread 0 publishes the slot.
  __device__ void sync() const {
    __threadfence_system();
    __syncthreads();
  }
  __device__ int share(int v) const {
    __shared__ int cell;
    if (leader()) cell = v;
    __syncthreads();
    const int r = cell;
    __syncthreads();
    return r;
  }
  __device__ uint64_t nowNs() const {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
};

__global__ void primKernel(const DevPrim* prims, RedOp op, precclDataType_t t, size_t esz, const volatile int* abort,
                           uint64_t budgetNs, PrimStats* stats, int* ends) {
  BlockLanes lanes;
  const uint64_t deadline = lanes.nowNs() + budgetNs;
  PrimStats st{};
  const PrimEnd e = runPrim(lanes, prims[blockIdx.x], op, t, esz, abort, deadline, &st);
  if (lanes.leader()) {
    stats[blockIdx.x] = st;
    ends[blockIdx.x] = int(e);
  }
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
