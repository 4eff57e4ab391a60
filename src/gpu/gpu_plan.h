// The CCT's kernel: a run of a plan (exec/run.h) with one block per task, all resident at once (a VT's
// tasks and the ranks' chains hand slots to each other). Every pointer the run holds (steps, tasks, FIFO
// ends and the memory behind them, task and VT state, the caller's buffers) is device-visible.
#pragma once
#include "exec/run.h"

namespace preccl::gpu {

// Enqueues the run's kernel on `stream` (a cudaStream_t): the blocks of the tasks whose lanes have not
// ended, until each ends or *stop (device-visible, read at system scope) is raised. run.startNs 0: each
// block measures from its own start. Returns the launch's CUDA error.
int launchPlan(const Run& run, const int* stop, void* stream);
// How many of the kernel's blocks the current device holds at once (0: unknown). Every task's block must
// be resident together, and those of every rank sharing the device: a plan with more waits forever.
int residentPlanBlocks();

}  // namespace preccl::gpu
