// One run of a plan (one attempt of a CCT) as the task code sees it (exec/task.h): the plan's arrays, the
// FIFO ends its edges are bound to, and the run's state, per task and per VT. Plain data, so that a kernel
// reads it as the host does: where it lives is the runner's choice (exec/runs.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/slot_rules.h"
#include "plan/plan.h"
#include "policy/telemetry.h"
#include "reduce/reduce.h"
#include "transport/fifo.h"

namespace preccl {

// A task's progress, written by the lanes that run it.
struct TaskRun {
  static constexpr int32_t kNotStarted = -1, kFinished = -2;
  // The step it is in, or kNotStarted while it waits for the tasks before it (Task::after), or kFinished.
  // Read by the tasks that wait for it and by the host's watch while the lanes run (exec/shared_atomic.h
  // hostVisibleLoad).
  int32_t cur = kNotStarted;
  int32_t waitEdge = -1;     // the edge it last waited on or stopped at (Plan::edges), for messages
  uint64_t off = 0;          // bytes of the current step done
  uint64_t piece = 0;        // the bytes of the piece under way (set before the lanes move it)
  uint64_t stallFromNs = 0;
  uint8_t stalled = 0;       // waiting for room downstream, counted once
  uint8_t cutTaken = 0;      // Task::cutStep passed: the slots carry this CCT's records
  uint8_t cutArrived = 0;    // a shared cut: counted in VtRun::sharedCutsLeft
  // Where a runner's lanes run it (exec/lane_loop.h): how its lanes stopped (an Adv other than Moved and
  // Blocked, or kStopped by the host's flag; 0 while they run) and a count of its advances that moved,
  // which the host's watchdog reads.
  static constexpr int32_t kStopped = -1;
  int32_t end = 0;
  uint32_t moves = 0;
};

// What a VT's tasks share during the run, and what the host reads back after it.
struct VtRun {
  uint64_t bytes = 0, stalls = 0, stallNs = 0, relayed = 0;  // this CCT's (VtCounters::last*)
  uint64_t doneNs = 0;          // from the start until the VT's last task finished here
  VtRecord now{};               // this CCT's records from the cut on: this rank's snapshot and every one heard
  VtRecord cargo{};             // the older epoch's records riding on the slots (Run::teleEpoch)
  uint32_t sharedCutsLeft = 0;  // tasks with a shared cut not there yet (Plan::sharedCuts)
  int32_t sharedSnapshot = 0;   // Plan::sharedCutSnapshot
  int32_t sharedCutOpen = 0;    // raised once the last shared cut was reached (and its snapshot taken)
};

// Where an attempt's per-task and per-VT state lives on the host: kept by the caller from attempt to attempt,
// so that a small call allocates none of it.
struct AttemptMemory {
  std::vector<TaskRun> tasks;
  std::vector<VtRun> vts;
};

struct Run {
  const Step* steps = nullptr;
  const Task* tasks = nullptr;
  int ntasks = 0;
  // Per plan edge, its FIFO ends (bound: exec/bind.h).
  FifoProducer* const* send = nullptr;
  FifoConsumer* const* recv = nullptr;
  TaskRun* task = nullptr;
  VtRun* vt = nullptr;
  uint64_t epoch = 0;
  uint32_t attempt = 0;
  uint32_t digest = 0;
  bool checkDigest = false;
  bool agree = false;      // an abort notice of this attempt ends a task (Adv::Abort)
  bool dropStale = false;  // data of aborted attempts may be queued and is dropped
  DeferredCommit defer;    // with `agree`: this attempt's deferred commit, or a pending one (exec/slot_rules.h)
  precclDataType_t dtype = precclFloat;
  size_t esz = 4;
  RedOp op;
  uint64_t teleEpoch = kNoTeleEpoch;  // the older epoch whose records ride on the slots as cargo
  uint64_t startNs = 0;          // the lanes' clock at the start (elapsed times are measured from it)
  LastCommit last;               // for a peer still committing it (exec/slot_rules.h commitNeedsAnswer)
};

}  // namespace preccl
