// A CCT's plan as plain data that a kernel (or CPU threads) can read: the host's CctPlan (core/plan.h,
// device/primitives.h) with every Conn replaced by an index into arrays of FIFO ends, and the per-VT state
// the host executor keeps in the communicator (counters, the telemetry records) beside it. Built by
// device/plan_compile.h; run by gpu/dev_task.h, one set of lanes per task, all at once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "reduce/reduce.h"
#include "plan/stride_map.h"
#include "exec/dev_prim.h"
#include "policy/telemetry.h"
#include "transport/fifo.h"

namespace preccl::gpu {

// One Step: its edges are indices into DevPlan::sends and DevPlan::recvs.
struct DevStep : StrideMap {
  int16_t recv[2] = {-1, -1}, send[2] = {-1, -1};
  int16_t nrecv = 0, nsend = 0;
  const char* src = nullptr;
  char* dst = nullptr;
  size_t bytes = 0;
  bool reduce = false, post = false, headerOnly = false, relayed = false, relayIsSend = false;
};

// One Task: steps [firstStep, firstStep + nsteps) of DevPlan::steps.
struct DevTask {
  static constexpr uint32_t kNoCut = UINT32_MAX;
  int vt = 0;
  uint32_t firstStep = 0, nsteps = 0;
  size_t piece = 0;                   // bytes per slot, resolved
  uint32_t cutStep = kNoCut;          // Task::cutStep (in the task's own steps)
  size_t cutOff = 0;
  bool cutRelay = false, cutShared = false;
  uint32_t afterFirst = 0, afterLast = 0;  // tasks that must be done first (Task::after)
};

// What the VT's tasks share during the run, and what the host reads back after it.
struct DevVt {
  PrimStats st;                 // this CCT's bytes, stalls, stall time and relayed bytes on the VT
  uint64_t doneNs = 0;          // from the start until the VT's last task finished (CctPlan::vtDoneNs)
  VtRecord now{}, cargo{};      // CctPlan::now and CctPlan::cargo of the VT: per-field running maxima
  uint32_t sharedCutsLeft = 0;  // CctPlan::sharedCutsLeft
  int sharedSnapshot = 0;       // CctPlan::sharedCutSnapshot
  int sharedCutOpen = 0;        // raised once the last shared cut was reached (and its snapshot taken)
};

// How a task ended, for the host's message (TaskEnd::Done: the task finished).
struct TaskEnd {
  int end = 0;       // PrimEnd, or kWaitedAfter for a task still waiting for the tasks before it
  int step = -1;     // the step it ended in
  static constexpr int kWaitedAfter = 16;
};

struct DevPlan {
  uint64_t epoch = 0;
  uint32_t attempt = 0, digest = 0;
  bool checkDigest = false;
  precclDataType_t dtype = precclFloat;
  size_t esz = 4;
  RedOp op;
  uint64_t teleEpoch = ~0ull;  // CctPlan::teleEpoch: the older epoch whose cargo rides on the slots
  const DevStep* steps = nullptr;
  const DevTask* tasks = nullptr;
  int ntasks = 0;
  FifoProducer* sends = nullptr;  // one per send edge of the plan
  FifoConsumer* recvs = nullptr;  // one per receive edge
  DevVt* vts = nullptr;
  // Per task: the step it is in, kNotStarted while it waits for the tasks before it, kFinished once done.
  // Read by the tasks that wait for it (Task::after) and by the host's watch (device/plan_watch.h) while
  // the lanes run.
  int* progress = nullptr;
  static constexpr int kNotStarted = -1, kFinished = -2;
  TaskEnd* ends = nullptr;        // per task
  uint64_t startNs = 0;           // the lanes' clock at the start (elapsed times are measured from it)
  const volatile int* abort = nullptr;
  int* failed = nullptr;          // the CCT's kernel raises it when a task ends without finishing (null: none)
  uint64_t budgetNs = 0;          // a wait without progress this long ends the task (PRECCL_TIMEOUT)
};

}  // namespace preccl::gpu
