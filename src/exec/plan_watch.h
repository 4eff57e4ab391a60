// The host's side of a compiled plan's run (device/plan_compile.h), whoever runs its tasks: CPU threads
// (device/lane_exec.cc) or the CCT's kernel (gpu/gpu_exec.cu). While they run, the host watches what they
// cannot see (the communicator's abort, a transport that failed, a local peer that died) and raises the
// flag they poll; afterwards it settles the plan and waits for the slots a proxy still has to hand on.
#pragma once
#include <functional>

#include "exec/executor.h"
#include "exec/plan_compile.h"

namespace preccl {

// `poll()` waits a little (at most a few ms) for the tasks and answers whether some still run, with
// *failedTask set to a task that ended without finishing (or left at -1); `progress` is the run's
// DevPlan::progress. Returns an error (and raises *stop) for what the host saw; success when the tasks
// stopped on their own.
precclResult_t watchPlan(const ExecCtx& ctx, const CompiledPlan& c, volatile int* stop, int* progress,
                         const std::function<bool(int* failedTask)>& poll, int* failedTask, ExecFault* fault);
// After the run (`res`: the watch's result, `failedTask`: its report): the plan and the counters settled
// as the host executor leaves them, the failed task's message, the staged slots handed on.
precclResult_t finishPlan(const ExecCtx& ctx, CompiledPlan& c, CctPlan& plan, precclResult_t res, int failedTask,
                          ExecFault* fault);

}  // namespace preccl
