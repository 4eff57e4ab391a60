// A CUDA block as the lanes of the task code (exec/task.h, exec/lane_loop.h): thread 0 waits on the FIFOs
// (and counts the stalls), every thread moves the piece's elements, a system-scope fence and a barrier
// before the slot is published.
#pragma once
#include <cstddef>
#include <cstdint>

#include "reduce/reduce_arith.h"
#include "reduce/reduce_lanes.h"

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
  __device__ void arm() const {}
  __device__ void relax(int) const { __nanosleep(64); }
  template <class End> __device__ void ended(End) const {}
  __device__ uint64_t nowNs() const {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  // reduceCopy's contract (reduce/reduce.h) over the block's threads, element by element.
  __device__ void reduceCopy(const RedOp& op, precclDataType_t t, size_t esz, size_t n, const void* local,
                             const void* const* in, int nin, void* const* outs, int nout, bool post) const {
    red::Args a;
    if (red::resolve(op, n, local, in, nin, outs, nout, post, &a)) red::reduceLanes(t, red::elemArgs(a, esz), id(), count());
  }
  __device__ void copy(const void* from, void* const* outs, int nout, size_t bytes) const {
    const unsigned char* s = static_cast<const unsigned char*>(from);
    for (int o = 0; o < nout; o++) {
      unsigned char* d = static_cast<unsigned char*>(outs[o]);
      if (d == s) continue;
      for (size_t i = id(); i < bytes; i += count()) d[i] = s[i];
    }
  }
};

}  // namespace preccl::gpu
