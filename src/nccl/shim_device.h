// What the NCCL drop-in does with a GPU (docs/nccl.md, "Device buffers"): where the GPU path is built in
// (PRECCL_SHIM_GPU) and CUDA finds a device at the first communicator, calls on device buffers run in
// the CCT's kernel (gpu/gpu_exec.h), ncclMemAlloc is cudaMalloc, and a call waits for the work already on
// its stream (the kernels that wrote its input) before it runs. Elsewhere these do nothing.
#pragma once
#include <cstddef>

#include "preccl/preccl.h"

namespace preccl::shim {

#if PRECCL_SHIM_GPU
void useDevice();
bool deviceInUse();
// Before a call on `cudaStream`: waits for the work already on it; refuses a stream being captured into
// a CUDA graph (the call would run now, not when the graph is replayed).
precclResult_t waitStream(void* cudaStream);
precclResult_t memAlloc(void** ptr, size_t size);
precclResult_t memFree(void* ptr);
#else
inline void useDevice() {}
inline bool deviceInUse() { return false; }
inline precclResult_t waitStream(void*) { return precclSuccess; }
inline precclResult_t memAlloc(void** ptr, size_t size) { return precclMemAlloc(ptr, size); }
inline precclResult_t memFree(void* ptr) { return precclMemFree(ptr); }
#endif

}  // namespace preccl::shim
