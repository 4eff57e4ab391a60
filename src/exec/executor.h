// The executors: what runs one attempt of a CCT's plan over the communicator's edges. All of them run the
// same task code (exec/task.h) and end the attempt the same way (exec/attempt.h: the agreement's commit
// or abort, or the staged sends handed over):
//   runHost   every task on the calling thread, in turn, sleeping on the rank's bell when none can move;
//   runLanes  a CPU thread per task, as the CCT's kernel runs a block per task (PRECCL_EXECUTOR=lanes);
//   the device executor (gpu/gpu_exec.h), where the program enabled it, for calls on device memory.
// An executor sees an execution context, not the communicator: what it needs to run, count and give up.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/agreement.h"
#include "exec/bind.h"
#include "exec/run.h"
#include "plan/plan.h"
#include "preccl/preccl.h"
#include "transport/doorbell.h"

namespace preccl {

// Per-VT telemetry of this rank: totals and the last CCT's values.
struct VtCounters {
  uint64_t bytes = 0, stalls = 0, stallNs = 0;
  uint64_t lastBytes = 0, lastStalls = 0, lastStallNs = 0;
  uint64_t relayed = 0, lastRelayed = 0;  // of the bytes, those this rank forwarded for a local rank (rail)
  double lastShare = 0;
};

// The edges the agreement's notices travel on besides the plan's own, for one mask (the communicator
// builds them once per mask: the schedule alone is O(n) to build).
struct NoticeEdges {
  // The lowest live VT's noticeGraph edges (the `out` ones first), then every live VT's ring neighbours.
  std::vector<Conn*> notify;
  size_t narrow = 0;  // commits go to notify[0, narrow) until a path dies (Agreement::widen)
  size_t back = 0;    // notify[0, back): the dissemination edges both ways (Agreement::reachBack)
  std::vector<std::vector<uint64_t>> schedule;  // when each narrow edge gets the commit (commitSchedule)
  // The masked VTs' ring-neighbour edges: the notices' way round when every live VT's path died (their
  // VTs may answer again, and an abort can move the retry onto them). Used by aborts and after widen().
  std::vector<Conn*> spare;
};

struct ExecCtx {
  int rank = 0;
  int nranks = 1;
  size_t slotBytes = 0;                       // the FIFOs' slot
  uint64_t timeoutNs = 0;                     // PRECCL_TIMEOUT: no progress for this long fails the CCT
  Bell* bell = nullptr;                       // where the host sleeps; peers and the proxy ring it
  const std::atomic<int>* abort = nullptr;    // set by CommAbort: return at once
  std::vector<VtCounters>* vtStats = nullptr; // per VT; the last* fields are this CCT's
  // Every edge of the communicator: one that failed outside this CCT's plan (a peer that died) fails it too.
  const ConnTable* edges = nullptr;
  uint64_t epoch = 0;
  // In-band telemetry of an earlier epoch riding on this CCT's slots (none when teleEpoch is kNoTeleEpoch):
  // per VT, the running maximum of every record heard so far; starts as this rank's own record.
  uint64_t teleEpoch = kNoTeleEpoch;
  const std::vector<VtRecord>* cargo = nullptr;
  // Partial failures (docs/failures.md). `agree`: the CCT ends with a commit or an abort agreed by every
  // rank (exec/agreement.h); without it a dead path fails the CCT. `attempt`: this run of the epoch.
  // `dropStale`: slots of older attempts may be queued and are dropped. `liveMask`: the VTs not masked.
  // `notice`: the edges the agreement's notices travel on besides the plan's own (with the agreement).
  // `detectMs`: a path with nothing acknowledged for this long is dead.
  bool agree = false;
  uint32_t attempt = 0;
  bool dropStale = false;
  uint64_t liveMask = ~0ull;
  const NoticeEdges* notice = nullptr;
  uint32_t detectMs = 500;
  // The masked VTs this rank cannot take back yet (core/probe.h): asked when its tasks are done, for the
  // commit (then rather than at the start, so that a path that returned during a long call counts), and
  // while it waits, for an abort.
  std::function<uint64_t()> report;
  // The attempt this rank committed last, for a peer still committing it (exec/agreement.h).
  const CommitRecord* lastCommit = nullptr;
  // A small call on the host runner: its thread moves the bytes of the edges it waits on itself
  // (Transport::drive) until it sleeps, where a progress thread's hop would cost more than the bytes.
  bool drive = false;
  // With `agree`: whether this attempt's commit is deferred, and the pending attempt (exec/slot_rules.h
  // DeferredCommit). `joinAbort`: no tasks; this rank joins the abort of (epoch, attempt), a pending
  // attempt of its own, reporting `joinVts`.
  DeferredCommit defer;
  AttemptMemory* memory = nullptr;  // null: the attempt's own
  bool joinAbort = false;
  uint64_t joinVts = 0;
};

// What a run leaves for the telemetry (core/settle.cc), per VT: this CCT's records from the cut on, the
// older epoch's cargo as heard, and the time from the start until the VT's last task finished here.
struct RunOut {
  std::vector<VtRecord> now, cargo;
  std::vector<uint64_t> vtDoneNs;
};

// Why a CCT did not finish, attributed to the edge where one is to blame: its peer, VT and this rank's
// NIC (-1: none, or shared memory). The caller decides whether the communicator survives it.
struct ExecFault {
  precclResult_t code = precclSuccess;
  int peer = -1, vt = -1, nic = -1;
  std::string what;  // the whole message, naming the edge's path
  // The ranks agreed to give the attempt up: run it again without `agreedVts` (every rank got the same).
  // After a commit, `agreedVts` holds the masked VTs that some rank cannot take back yet.
  bool aborted = false;
  uint64_t agreedVts = 0;
  uint64_t notReadyVts = ~0ull;  // aborted: the masked VTs some rank cannot take back yet
  CommitRecord committed;        // committed: its final notice (ExecCtx::lastCommit of the next CCT)
  // The pending attempt (ExecCtx::defer) is being aborted: this one was given up unended; the rank joins
  // that abort, reporting `failedVts`, the VTs it knew had failed.
  bool pendingAborted = false;
  bool deferred = false;  // succeeded without a commit: the attempt's commit is deferred (ExecCtx::defer)
  uint64_t failedVts = 0;
};

precclResult_t runHost(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault);
precclResult_t runLanes(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault);

// The device executor (gpu/gpu_exec.h), present where the GPU path is linked and the program enabled it:
// it runs a CCT whose buffers are device memory, in the CCT's kernel.
struct DeviceExecutor {
  bool (*isDevice)(const void* p) = nullptr;  // p is device (or managed) memory
  precclResult_t (*run)(const ExecCtx& ctx, const Plan& plan, const Bound& b, RunOut* out, ExecFault* fault) = nullptr;
  // A new communicator's FIFO: make it device-visible ("" or what failed). forget: its memory is about to
  // go (the communicator is freed).
  std::string (*pin)(const Fifo& f) = nullptr;
  void (*forget)(const void* fifoMem) = nullptr;
};
void setDeviceExecutor(const DeviceExecutor& d);
const DeviceExecutor& deviceExecutor();

}  // namespace preccl
