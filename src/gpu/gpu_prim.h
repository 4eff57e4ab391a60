// Runs device primitives (gpu/dev_prim.h) on the GPU, one block each, all at once (a chain of them
// hands slots along through its FIFOs, so they must run together). Every pointer a DevPrim holds, its
// FIFO ends included, is device-visible memory.
#pragma once
#include "exec/dev_prim.h"

namespace preccl::gpu {

// Enqueues one kernel of n blocks on `stream` (a cudaStream_t). Block i runs prims[i]; a wait with no
// progress for budgetNs ends it, and so does *abort. stats[i] and ends[i] (device memory) get
// its counters and how it ended. Returns the launch's CUDA error.
int launchPrims(const DevPrim* prims, int n, const RedOp& op, precclDataType_t t, const volatile int* abort,
                uint64_t budgetNs, PrimStats* stats, int* ends, void* stream);

}  // namespace preccl::gpu
