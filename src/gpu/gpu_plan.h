// The CCT's kernel: a compiled plan (gpu/dev_plan.h) with one block per task, all resident at once (a
// VT's tasks and the ranks' chains hand slots to each other). Every pointer the plan holds (steps, tasks,
// FIFO ends and the memory behind them, VT rows, flags, the caller's buffers) is device-visible.
#pragma once
#include "exec/dev_plan.h"

namespace preccl::gpu {

// Enqueues the plan's kernel on `stream` (a cudaStream_t); plan.ends (device-visible) gets how each task
// ended, plan.vts the counters and records. plan.startNs 0: each block measures from its own start.
// Returns the launch's CUDA error.
int launchPlan(const DevPlan& plan, void* stream);
// How many of the kernel's blocks the current device holds at once (0: unknown). Every task's block must
// be resident together, and those of every rank sharing the device: a plan with more waits forever.
int residentPlanBlocks();

}  // namespace preccl::gpu
