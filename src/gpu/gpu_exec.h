// The device executor: a CCT whose buffers are device memory runs in one kernel (gpu/gpu_plan.h), one
// block per task, over the communicator's own FIFOs made device-visible (shared memory and the socket
// proxy's FIFOs registered with CUDA as mapped host memory: the proxy moves slots between them and the
// wire, as it does for the host runner). The kernel is a lanes runner's lanes (exec/lane_runner.h): the host
// watches it, and the attempt ends as every attempt does.
#pragma once
#include "exec/executor.h"

namespace preccl::gpu {

// Makes every communicator of this process run CCTs with device buffers on the GPU (core/cct.cc
// asks deviceExecutor()). Call it before the communicators are made: they register their FIFOs with CUDA
// at init (core/comm_init.cc); linking preccl_gpu alone changes nothing.
void enableDeviceExecutor();

precclResult_t executeDevice(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault);
}  // namespace preccl::gpu
