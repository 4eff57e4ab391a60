// A CUDA block as the lanes of the device executor's code (gpu/dev_prim.h, gpu/dev_task.h): thread 0
// waits on the FIFOs (and counts the stalls), every thread moves the piece's elements, a system-scope
// fence and a barrier before the slot is published.
#pragma once
#include <cstddef>
#include <cstdint>

namespace preccl::gpu {

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
  __device__ void relax() const { __nanosleep(64); }
  __device__ uint64_t nowNs() const {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
};

}  // namespace preccl::gpu
