// One attempt of a CCT on this rank, whoever runs its tasks: the run's state (exec/run.h), the look at
// the edges the tasks wait on (a peer that died, a path gone silent, the watchdog), and the end every
// rank agrees on (exec/agreement.h: commit, or abort with the failed VTs) or, without the agreement, the
// staged sends handed over. The host runner steps the tasks inside loop(); a lanes runner runs them
// elsewhere, watches with look() and peek(), then calls loop() for the end.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/agreement.h"
#include "exec/executor.h"
#include "exec/run.h"

namespace preccl {

class Attempt {
 public:
  Attempt(const ExecCtx& ctx, const Plan& plan, const Bound& b, ExecFault* fault);

  // The run as the task code sees it, over the bound ends (the host runner's; a lanes runner makes its
  // own over copies, sharing the state arrays).
  Run& run() { return run_; }
  std::vector<TaskRun>& tasks() { return tasks_; }
  std::vector<VtRun>& vts() { return vts_; }
  Agreement& agreement() { return agree_; }

  // Until the attempt ends: the host runner's tasks advanced in turn here (`hostTasks`), or, for a lanes
  // runner, the end alone after its lanes stopped (the tasks finished, or the agreement is aborting).
  precclResult_t loop(bool hostTasks);

  // What a lanes runner's watch asks while its lanes run (none of it touches a FIFO end). look(): the
  // periodic look at the edges; a dead path is an error without the agreement (the result), else
  // *abortNow. peek(): an abort of this attempt queued for this rank somewhere (Agreement::peek).
  precclResult_t look(bool* abortNow);
  bool peek() { return ctx_.agree && agree_.peek(); }
  // The watch's failures, with the messages the host runner gives: the communicator's abort, no progress
  // for PRECCL_TIMEOUT, a slot that is not this attempt's (task ti's edge).
  precclResult_t aborted();
  precclResult_t timedOut();
  precclResult_t badSlot(int ti);

  // The counters into ctx.vtStats and the records into `out`, as the run left them.
  void results(RunOut* out);

 private:
  precclResult_t fail(precclResult_t code, const Conn* c, std::string what);
  bool stepTasks(bool* all, precclResult_t* err);
  bool allFinished() const;
  bool flushed(bool* moved);
  const Conn* waitingOn() const;
  template <typename Fn> Conn* findBlocked(Fn fn);
  precclResult_t brokenEdge(bool anywhere);
  void checkStalled();
  Conn* checkPaths();
  precclResult_t agreedAbort();
  precclResult_t pendingAborted();
  const char* phaseName() const;
  // The edges whose paths the attempt looks at: the agreement's (the plan's and the notices'), or without
  // it the plan's.
  const std::vector<Conn*>& lookEdges() const { return ctx_.agree ? agree_.edges() : b_.conns; }
  void driving(bool on);
  bool drive();

  const ExecCtx& ctx_;
  const Plan& plan_;
  const Bound& b_;
  ExecFault* fault_;
  AttemptMemory own_;
  std::vector<TaskRun>& tasks_;  // in ExecCtx::memory, or own_
  std::vector<VtRun>& vts_;
  Run run_;
  Agreement agree_;
  std::vector<std::pair<Conn*, uint64_t>> staged_;  // the staged edges, with the head last seen
  uint64_t suspects_ = 0;  // VTs with a dead path among the agreement's edges, at the last look
  uint64_t committingSinceNs_ = 0;
  bool deferredDone_ = false;  // a deferred attempt's tasks are done: only its last slots are left to hand over
  int lastBlocked_ = -1;   // the task the host runner saw blocked last (for messages)
  std::vector<Transport*> drivers_;  // the edges' transports, while this thread drives them (ExecCtx::drive)
};

// Why a CCT fails on an edge it still needs whose transport failed it or whose peer closed it.
std::string goneEdgeWhy(int rank, const Conn& c);

}  // namespace preccl
