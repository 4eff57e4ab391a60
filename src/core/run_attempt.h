// The CCT pipeline's run step (core/cct.cc): one attempt of a planned and bound call on this rank's
// executor, and what an attempt that did not commit means for the communicator.
#pragma once
#include <cstdint>

#include "exec/executor.h"
#include "plan/call.h"
#include "plan/plan.h"

struct precclComm;

namespace preccl {

// What the pipeline prepared once per call: the call itself (its input staged where needed), whether the
// ranks agree on how each attempt ends, and where it runs.
struct Cct {
  CctArgs a;
  bool agree = false;     // commit or abort by agreement, with retries (docs/failures.md)
  bool onDevice = false;  // device buffers: the device executor (gpu/gpu_exec.h)
  // Its attempts end without a commit (core/deferred.h), its input in the communicator's kept[keptBuf].
  bool deferred = false;
  int keptBuf = 0;
  // The pending call run again after this rank returned it (core/cct.cc recoverPending): no pending call
  // before it, and no telemetry rides on it (its epoch's was settled when it returned).
  bool rerun = false;
};

// What a call's attempts are made of, kept by the communicator from call to call (their memory with them).
struct CallState {
  Decision decision;
  Plan plan;
  Bound bound;
  RunOut out;
  AttemptMemory memory;
};

// Runs attempt `attempt` of c on the executor it goes to: the device executor for device buffers, the lanes
// (PRECCL_EXECUTOR=lanes) or the host runner.
precclResult_t runAttempt(precclComm* comm, const Cct& c, const Plan& plan, const Bound& b, uint32_t attempt, RunOut* out,
                          ExecFault* fault);
// After an attempt that did not commit: an agreed abort masks the failed VTs (or, when none would be left,
// keeps them for another try until PRECCL_TIMEOUT has passed since the first such abort) and returns
// success, for the next attempt; any other fault fails the communicator, since its FIFOs may hold half a
// CCT, and is returned.
precclResult_t recoverAttempt(precclComm* comm, const ExecFault& fault, uint32_t attempt, precclResult_t res);
// This rank's part in the abort of the pending attempt (an attempt with no tasks that starts aborting, over
// the notice edges and those of `b`, the attempt it gave up), reporting `failed`. Ends as an attempt does:
// aborted by agreement, or a fault.
precclResult_t joinPendingAbort(precclComm* comm, const Cct& pending, const Bound& b, uint64_t failed, ExecFault* fault);

}  // namespace preccl
