// One task on lanes of its own (exec/lane_runner.h): a CPU thread, or a CUDA block of the CCT's kernel.
// It advances the task (exec/task.h) until it ends, stops at something only the host can do, or the host's
// flag stops it, and leaves how it stopped in TaskRun::end.
#pragma once
#include "exec/shared_atomic.h"
#include "exec/task.h"

namespace preccl {

// Lanes add to exec/task.h's: arm() before a look (a host thread notes its bell, so that a ring after the
// look ends the wait) and relax(idle) when nothing could move (idle counts the looks in a row).
template <class Lanes> PRECCL_HD void laneLoop(Lanes& lanes, const Run& r, int ti, const int* stop) {
  TaskRun& me = r.task[ti];
  for (int idle = 0;; idle++) {
    lanes.arm();
    const Adv a = advance(lanes, r, ti);
    if (a == Adv::Moved || a == Adv::Done) {
      if (lanes.leader()) hostVisibleStore(&me.moves, me.moves + 1);
      idle = 0;
    }
    if (a != Adv::Moved && a != Adv::Blocked) {
      if (lanes.leader()) hostVisibleStore(&me.end, int32_t(a));
      lanes.ended(a);
      return;
    }
    if (lanes.share(lanes.leader() ? hostVisibleLoad(stop) : 0)) {
      if (lanes.leader()) hostVisibleStore(&me.end, TaskRun::kStopped);
      return;
    }
    if (a == Adv::Blocked) lanes.relax(idle);
  }
}

}  // namespace preccl
