// The device twin of reduceCopy (reduce/reduce.h): the same contract and the same bits, over device
// memory, enqueued on a CUDA stream. Built only when CMake finds nvcc (docs/gpu.md).
#pragma once
#include <cstddef>

#include "reduce/reduce.h"
#include "preccl/preccl.h"

namespace preccl::gpu {

// Enqueues the reduction on `stream` (a cudaStream_t; nullptr: the default stream). Returns the CUDA
// error of the launch (0: launched; a call with nothing to do launches nothing and returns 0).
int reduceCopy(const RedOp& op, precclDataType_t t, size_t n, const void* local, const void* const* recv,
               int nrecv, void* const* outs, int nout, bool applyPost, void* stream);

}  // namespace preccl::gpu
