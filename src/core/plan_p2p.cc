// Point-to-point families: AlltoAll, Gather, Scatter and grouped Send/Recv. Every (peer, VT, direction)
// is its own task, so a group's operations progress together in any order without deadlock; operations
// to the same peer share the edge's FIFO in call order, which is how they are matched (as in NCCL).
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "core/comm.h"
#include "core/plan.h"
#include "reduce/dtype.h"
#include "policy/rail_split.h"

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

// A send and its receive are split over the VTs alike on both ranks: AlltoAll's current shares for the
// same per-peer size (every rank holds the same, AlltoAll being collective), read only. Send/Recv carry
// no telemetry of their own; grouped, they are how PyTorch runs an AlltoAll with uneven splits. Under
// rail affinity a transfer to another host uses only the VTs whose NIC the sender owns (the relay is not
// part of the call; the direct edges are there when every one of those VTs is masked).
Allocation p2pAllocation(precclComm* comm, const AllocRequest& req, int sender, bool remote) {
  uint64_t mask = comm->liveMask;
  if (remote && comm->topo.rail && (mask & comm->topo.ownVts(sender, comm->nVTs)) != 0)
    mask &= comm->topo.ownVts(sender, comm->nVTs);
  if (comm->cfg.policy == PolicyKind::Static) return equalAllocation(req, mask);
  AllocKey key;
  key.coll = static_cast<uint8_t>(Coll::AlltoAll);
  return currentShares(comm->policy, req, key, mask);
}

// The last task added waits before its last piece for the shared cut of its VT (Task::cutShared).
void shareCut(CctPlan* plan, size_t slotBytes, size_t esz) {
  Task& t = plan->tasks.back();
  cutBeforeLastPiece(&t, slotBytes, esz);
  if (t.cutStep == Task::kNoCut) return;
  t.cutShared = true;
  plan->sharedCutsLeft[size_t(t.vt)]++;
}

// Each sender's split of its blocks over the VTs: the allocation itself, or under rail affinity the
// sender's share of its host's (policy/rail_split.h), computed alike on every rank.
struct SenderSplits {
  SenderSplits(precclComm* comm, const Allocation& al, size_t count, size_t esz) {
    const Topology& t = comm->topo;
    if (!t.rail) return;
    const size_t grain = std::max<size_t>(1, AllocRequest{}.grainBytes / esz);
    of.resize(size_t(comm->nranks));
    for (const auto& ranks : t.hostRanks) {
      // A VT's part differs from an equal one by up to a grain (policy/allocation.h), its host's by the
      // host's ranks times that; the owners absorb twice it (rail_split.h).
      const size_t slack = 2 * ranks.size() * grain;
      std::vector<uint64_t> own;
      for (int r : ranks) own.push_back(t.ownVts(r, comm->nVTs));
      std::vector<Allocation> split = railSplit(al, count, own, comm->liveMask, comm->relay, slack);
      for (size_t g = 0; g < ranks.size(); g++) of[size_t(ranks[g])] = std::move(split[g]);
    }
  }
  const Allocation& operator()(int rank, const Allocation& al) const { return of.empty() ? al : of[size_t(rank)]; }
  std::vector<Allocation> of;  // by rank; empty without rail affinity
};

}  // namespace

// Every rank sends its part of every block straight to its owner, so one hop brings each rank's record to
// every other. A VT's tasks, sends and receives, share one cut before their last piece, and every peer
// hears the same snapshot. It waits for the receives too: a send only fills its FIFO and the socket's
// buffers, so taken when the sends alone got there it would time the buffers, not the path (the model
// then saw a slow VT as fast and the split swung between the VTs). A VT whose part is a single piece has
// none (then the CCT has none).
// Under rail affinity a part on a VT whose NIC its sender does not own goes through the VT's relay on the
// sender's host: a send into shared memory, a forward there (the relay's own task, with its own FIFOs,
// so it never waits on the relay's own traffic), a receive from the relay's socket. The record still
// arrives in the same call: the relay passes its sender's slots on with their telemetry as they came.
void planAlltoAll(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const char* in = static_cast<const char*>(a.sendbuff);
  char* out = static_cast<char*>(a.recvbuff);
  const Topology& topo = comm->topo;
  const int me = comm->rank;
  const SenderSplits split(comm, al, a.count, esz);
  const Allocation& mine = split(me, al);
  plan->sharedCutsLeft.assign(al.vt.size(), 0);
  plan->sharedCutSnapshot.assign(al.vt.size(), 0);
  // Cuts when every live VT has a sender whose part is more than a piece: decided alike everywhere from
  // the splits, since a rank's own tasks may all be single pieces where another's are not (rail).
  plan->cutsRule = 1;
  const size_t piece = pieceBytes(comm->slotBytes, esz, 0);
  plan->senders.assign(al.vt.size(), std::vector<char>(size_t(comm->nranks), 0));
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    if (!isLive(comm->liveMask, v)) continue;
    bool any = false;
    for (int s = 0; s < comm->nranks; s++) {
      any |= split(s, al).vt[v].count * esz > piece;
      plan->senders[size_t(v)][size_t(s)] = split(s, al).vt[v].count > 0;
    }
    if (!any) plan->cutsRule = 0;
    plan->sharedCutSnapshot[v] = mine.vt[v].count * esz > piece;
  }
  auto block = [&](int q, const Allocation& s, int v) { return static_cast<size_t>(q) * a.count * esz + s.vt[v].offset * esz; };
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    for (int q = 0; q < comm->nranks; q++) {
      const size_t b = mine.vt[v].count * esz;
      if (q == me) {
        if (b) addTask(plan, v, copyStep(in + block(q, mine, v), out + block(q, mine, v), b));
        continue;
      }
      if (b) {
        addTask(plan, v, sendStep(railEdge(comm, me, q, v), in + block(q, mine, v), b));
        shareCut(plan, comm->slotBytes, esz);
      }
      const Allocation& theirs = split(q, al);
      if (const size_t rb = theirs.vt[v].count * esz) {
        addTask(plan, v, recvStep(railEdge(comm, q, me, v), out + block(q, theirs, v), rb));
        shareCut(plan, comm->slotBytes, esz);
      }
    }
    if (!topo.rail) continue;
    // The parts this rank relays: from each local rank whose VT v it carries, to every other host's ranks.
    for (int x : topo.hostRanks[topo.hostOf[me]]) {
      if (x == me || topo.relayFor(x, v) != me) continue;
      const size_t b = split(x, al).vt[v].count * esz;
      if (b == 0) continue;
      for (int y = 0; y < comm->nranks; y++) {
        if (topo.sameHost(x, y)) continue;
        Step s;
        s.recv[s.nrecv++] = comm->conns.relay(x, v, y);
        s.send[s.nsend++] = comm->conns.relay(y, v, x);
        s.bytes = b;
        s.relayed = s.relayIsSend = true;
        addTask(plan, v, s);
        shareCut(plan, comm->slotBytes, esz);
      }
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
    Allocation al = p2pAllocation(comm, req, op.isSend ? comm->rank : op.peer, !comm->topo.sameHost(comm->rank, op.peer));
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
