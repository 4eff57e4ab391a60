// A CCT's plan compiled into the device executor's plain data (gpu/dev_plan.h): the edges become indices
// into arrays of FIFO ends copied from the Conns (the run advances the copies; settle() puts them back),
// the per-VT state the host executor keeps in the communicator and the plan becomes DevVt rows. The
// arrays live here, in host memory: the lanes executor (device/lane_exec.cc) runs them where they are.
#pragma once
#include <vector>

#include "exec/executor.h"
#include "plan/plan.h"
#include "exec/dev_plan.h"

namespace preccl {

struct CompiledPlan {
  gpu::DevPlan dev;  // points into the arrays below
  std::vector<gpu::DevStep> steps;
  std::vector<gpu::DevTask> tasks;
  std::vector<FifoProducer> sends;
  std::vector<FifoConsumer> recvs;
  std::vector<Conn*> sendEdges, recvEdges;  // the Conn each end came from
  std::vector<gpu::DevVt> vts;
  std::vector<int> progress;  // DevPlan::progress, where the host runs the lanes (the device executor maps its own)
  std::vector<gpu::TaskEnd> ends;
  // The edge a task waited on in its step, for messages: its first receive edge, else its first send.
  const Conn* edgeOf(int task, int step) const;
  // Calls fn(conn) on each edge a running task waits on in its current step (`progress`, read now): a
  // receive FIFO with no slot waiting, a send FIFO with no free slot; stops at the first that returns true.
  template <class Fn> Conn* blockedEdge(const int* progressNow, Fn fn) const;
};

template <class Fn> Conn* CompiledPlan::blockedEdge(const int* progressNow, Fn fn) const {
  for (size_t i = 0; i < tasks.size(); i++) {
    const int k = progressNow[i];
    if (k < 0 || k >= static_cast<int>(tasks[i].nsteps)) continue;
    const gpu::DevStep& s = steps[tasks[i].firstStep + k];
    for (int j = 0; j < s.nrecv; j++) {
      Conn* e = recvEdges[s.recv[j]];
      const FifoCtrl* f = e->recv.fifo().ctrl;
      if (counterLoad(f->tail) == counterLoad(f->head) && fn(e)) return e;
    }
    for (int j = 0; j < s.nsend; j++) {
      Conn* e = sendEdges[s.send[j]];
      const FifoCtrl* f = e->send.fifo().ctrl;
      if (counterLoad(f->tail) - counterLoad(f->head) >= e->send.fifo().nslots && fn(e)) return e;
    }
  }
  return nullptr;
}

// `plan` as the executor gets it (cargo, shared cuts and the like filled in by the planner).
void compilePlan(const CctPlan& plan, size_t slotBytes, uint32_t attempt, int nVTs, CompiledPlan* out);
// After the run: the FIFO ends back to their Conns; the VTs' counters into `stats` (the last* fields) and
// their records and times into the plan, as the host executor leaves them.
void settleCompiled(CompiledPlan& c, CctPlan& plan, std::vector<VtCounters>& stats);

}  // namespace preccl
