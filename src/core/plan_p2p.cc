// Point-to-point families: AlltoAll, Gather, Scatter and grouped Send/Recv. Every (peer, VT, direction)
// is its own task, so a group's operations progress together in any order without deadlock; operations
// to the same peer share the edge's FIFO in call order, which is how they are matched (as in NCCL).
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "core/comm.h"
#include "core/plan.h"
#include "device/dtype.h"

namespace preccl {

namespace {

Step sendStep(Conn* c, const char* src, size_t bytes) {
  Step s;
  s.send[s.nsend++] = c;
  s.src = src;
  s.bytes = bytes;
  return s;
}

Step recvStep(Conn* c, char* dst, size_t bytes) {
  Step s;
  s.recv[s.nrecv++] = c;
  s.dst = dst;
  s.bytes = bytes;
  return s;
}

Step copyStep(const char* src, char* dst, size_t bytes) {
  Step s;
  s.src = src;
  s.dst = dst;
  s.bytes = bytes;
  return s;
}

void addTask(CctPlan* plan, int vt, Step s) {
  Task t;
  t.vt = vt;
  t.steps.push_back(s);
  plan->tasks.push_back(std::move(t));
}

}  // namespace

// Every rank sends its part of every block straight to its owner, so one hop brings each rank's record to
// every other: the send tasks of a VT share one cut before their last piece (Task::cutShared), and
// every peer hears the same snapshot. A VT whose part is a single piece has none (then the CCT has none).
void planAlltoAll(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const char* in = static_cast<const char*>(a.sendbuff);
  char* out = static_cast<char*>(a.recvbuff);
  plan->sharedCutsLeft.assign(al.vt.size(), 0);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset * esz, b = al.vt[v].count * esz;
    if (b == 0) continue;
    for (int q = 0; q < comm->nranks; q++) {
      const size_t blk = static_cast<size_t>(q) * a.count * esz + o;
      if (q == comm->rank) {
        addTask(plan, v, copyStep(in + blk, out + blk, b));
        continue;
      }
      addTask(plan, v, sendStep(connTo(comm, q, v), in + blk, b));
      Task& t = plan->tasks.back();
      cutBeforeLastPiece(&t, comm->slotBytes, esz);
      if (t.cutStep != Task::kNoCut) {
        t.cutShared = true;
        plan->sharedCutsLeft[size_t(v)]++;
      }
      addTask(plan, v, recvStep(connTo(comm, q, v), out + blk, b));
    }
  }
}

void planGather(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset * esz, b = al.vt[v].count * esz;
    if (b == 0) continue;
    const char* in = static_cast<const char*>(a.sendbuff) + o;
    if (comm->rank != a.root) {
      addTask(plan, v, sendStep(connTo(comm, a.root, v), in, b));
      continue;
    }
    for (int q = 0; q < comm->nranks; q++) {
      char* dst = static_cast<char*>(a.recvbuff) + static_cast<size_t>(q) * a.count * esz + o;
      addTask(plan, v, q == a.root ? copyStep(in, dst, b) : recvStep(connTo(comm, q, v), dst, b));
    }
  }
}

void planScatter(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset * esz, b = al.vt[v].count * esz;
    if (b == 0) continue;
    char* out = static_cast<char*>(a.recvbuff) + o;
    if (comm->rank != a.root) {
      addTask(plan, v, recvStep(connTo(comm, a.root, v), out, b));
      continue;
    }
    for (int q = 0; q < comm->nranks; q++) {
      const char* src = static_cast<const char*>(a.sendbuff) + static_cast<size_t>(q) * a.count * esz + o;
      addTask(plan, v, q == a.root ? copyStep(src, out, b) : sendStep(connTo(comm, q, v), src, b));
    }
  }
}

bool planP2P(precclComm* comm, const CctArgs& a, CctPlan* plan, std::string* why) {
  const size_t esz = dtypeSize(a.dtype);
  // (peer, vt, isSend) -> task index, so that operations on one edge run in call order.
  std::map<std::tuple<int, int, bool>, size_t> taskOf;
  std::vector<const P2POp*> selfSends, selfRecvs;
  for (const P2POp& op : a.p2p) {
    if (op.peer == comm->rank) {
      (op.isSend ? selfSends : selfRecvs).push_back(&op);
      continue;
    }
    AllocRequest req;
    req.count = op.count;
    req.elemBytes = esz;
    req.nVTs = comm->nVTs;
    Allocation al = equalAllocation(req, comm->liveMask);
    for (int v = 0; v < comm->nVTs; v++) {
      const size_t o = al.vt[v].offset * esz, b = al.vt[v].count * esz;
      if (b == 0) continue;
      auto key = std::make_tuple(op.peer, v, op.isSend);
      auto it = taskOf.find(key);
      if (it == taskOf.end()) {
        it = taskOf.emplace(key, plan->tasks.size()).first;
        Task t;
        t.vt = v;
        plan->tasks.push_back(std::move(t));
      }
      Conn* c = connTo(comm, op.peer, v);
      plan->tasks[it->second].steps.push_back(op.isSend ? sendStep(c, static_cast<const char*>(op.buf) + o, b)
                                                        : recvStep(c, static_cast<char*>(op.buf) + o, b));
    }
  }
  if (selfSends.size() != selfRecvs.size()) {
    *why = fmt::format("rank {}: {} send(s) to itself but {} receive(s) from itself in one group", comm->rank,
                       selfSends.size(), selfRecvs.size());
    return false;
  }
  for (size_t i = 0; i < selfSends.size(); i++) {
    if (selfSends[i]->count != selfRecvs[i]->count) {
      *why = fmt::format("rank {}: send to itself of {} elements matched with a receive of {}", comm->rank,
                         selfSends[i]->count, selfRecvs[i]->count);
      return false;
    }
    addTask(plan, 0, copyStep(static_cast<const char*>(selfSends[i]->buf), static_cast<char*>(selfRecvs[i]->buf),
                              selfSends[i]->count * esz));
  }
  return true;
}

}  // namespace preccl
