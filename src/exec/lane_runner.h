// A runner whose tasks all run at once, each on lanes of its own (exec/lane_loop.h): CPU threads
// (runLanes, PRECCL_EXECUTOR=lanes) or the blocks of the CCT's kernel (gpu/gpu_exec.cc). The lanes move
// copies of the edges' FIFO ends; the calling thread watches them as the host watches a kernel (the
// communicator's abort, the edges' look, an abort queued for this rank, the watchdog) and stops them. When
// they stopped, the ends go back to their edges, and the attempt ends as the host runner's does
// (exec/attempt.h: the agreement's commit or abort, or the staged sends handed over). A task that stops at
// what only the host can do (a commit notice to answer) pauses every lane; the host does it, and the lanes
// start again where they were.
#pragma once
#include <string>

#include "exec/executor.h"
#include "exec/run.h"

namespace preccl {

// Where the lanes run. start(run): every task of `run` whose lanes have not ended (TaskRun::end == 0),
// with what the run points at made reachable there; "" or what failed. running(): waits a little (at most
// a few ms) and says whether some lane still runs. stop(): raises the flag the lanes poll. collect(run):
// once none runs, the run's state and FIFO ends back into `run`'s host arrays; "" or what failed.
// tasks(run): the TaskRun array the lanes write, which the host reads while they run (exec/shared_atomic.h
// hostVisibleLoad): their progress and how they stopped. failure(): the code of a call whose lanes could
// not start or be read back.
class LaneLauncher {
 public:
  virtual ~LaneLauncher() = default;
  virtual std::string start(const Run& run) = 0;
  virtual bool running() = 0;
  virtual void stop() = 0;
  virtual std::string collect(const Run& run) = 0;
  virtual const TaskRun* tasks(const Run& run) = 0;
  virtual precclResult_t failure() const { return precclSystemError; }
};

precclResult_t runWithLanes(const ExecCtx& ctx, const Plan& plan, const Bound& b, LaneLauncher& lanes, RunOut* out,
                            ExecFault* fault);

}  // namespace preccl
