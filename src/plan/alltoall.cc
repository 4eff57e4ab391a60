// Every rank to every rank (AlltoAll), and to or from a root (Gather, Scatter). Every (peer, VT, direction)
// is its own task, so the transfers progress together in any order without deadlock.
#include <algorithm>

#include "plan/layout.h"
#include "plan/planners.h"
#include "plan/steps.h"
#include "policy/policy.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// A task of one step (the FIFO's slot as its piece).
void addTask(Plan* plan, const PlanView& v, size_t esz, int vt, const Step& s) {
  plan->begin(vt, pieceBytes(v.slotBytes, esz, 0));
  plan->add(s);
}

// The last task added waits before its last piece for the shared cut of its VT (Task::cutShared).
void shareCut(Plan* plan) {
  Task& t = plan->last();
  cutBeforeLastPiece(*plan, &t);
  if (t.cutStep == Task::kNoCut) return;
  t.cutShared = true;
  plan->sharedCuts[size_t(t.vt)]++;
}

// Each sender's split of its blocks over the VTs: the allocation itself, or under rail affinity the
// sender's share of its host's (policy/rail_split.h), computed alike on every rank.
struct SenderSplits {
  SenderSplits(const PlanView& v, const Allocation& al, size_t count, size_t esz) {
    const Topology& t = *v.topo;
    if (!t.rail) return;
    const size_t grain = std::max<size_t>(1, AllocRequest{}.grainBytes / esz);
    of.resize(size_t(v.nranks));
    for (const auto& ranks : t.hostRanks) {
      // A VT's part differs from an equal one by up to a grain (policy/allocation.h), its host's by the
      // host's ranks times that; the owners absorb twice it (rail_split.h).
      const size_t slack = 2 * ranks.size() * grain;
      std::vector<uint64_t> own;
      for (int r : ranks) own.push_back(t.ownVts(r, v.nVTs));
      std::vector<Allocation> split = railSplit(al, count, own, v.liveMask, v.relay, slack);
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
void planAlltoAll(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const Allocation& al = d.al;
  const size_t esz = dtypeSize(a.dtype);
  const char* in = static_cast<const char*>(a.sendbuff);
  char* out = static_cast<char*>(a.recvbuff);
  const Topology& topo = *v.topo;
  const int me = v.rank;
  const SenderSplits split(v, al, a.count, esz);
  const Allocation& mine = split(me, al);
  plan->sharedCuts.assign(al.vt.size(), 0);
  plan->sharedCutSnapshot.assign(al.vt.size(), 0);
  // Cuts when every live VT has a sender whose part is more than a piece: decided alike everywhere from
  // the splits, since a rank's own tasks may all be single pieces where another's are not (rail).
  plan->cutsRule = 1;
  const size_t piece = pieceBytes(v.slotBytes, esz, 0);
  plan->senders.assign(al.vt.size(), std::vector<char>(size_t(v.nranks), 0));
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    if (!isLive(v.liveMask, vt)) continue;
    bool any = false;
    for (int s = 0; s < v.nranks; s++) {
      any |= split(s, al).vt[vt].count * esz > piece;
      plan->senders[size_t(vt)][size_t(s)] = split(s, al).vt[vt].count > 0;
    }
    if (!any) plan->cutsRule = 0;
    plan->sharedCutSnapshot[vt] = mine.vt[vt].count * esz > piece;
  }
  auto block = [&](int q, const Allocation& s, int vt) { return static_cast<size_t>(q) * a.count * esz + s.vt[vt].offset * esz; };
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    for (int q = 0; q < v.nranks; q++) {
      const size_t b = mine.vt[vt].count * esz;
      if (q == me) {
        if (b) addTask(plan, v, esz, vt, steps::copy(in + block(q, mine, vt), out + block(q, mine, vt), b));
        continue;
      }
      if (b) {
        addTask(plan, v, esz, vt, steps::send(plan->edge(railEdgeName(topo, me, me, q, vt)), in + block(q, mine, vt), b));
        shareCut(plan);
      }
      const Allocation& theirs = split(q, al);
      if (const size_t rb = theirs.vt[vt].count * esz) {
        addTask(plan, v, esz, vt, steps::recv(plan->edge(railEdgeName(topo, me, q, me, vt)), out + block(q, theirs, vt), rb));
        shareCut(plan);
      }
    }
    if (!topo.rail) continue;
    // The parts this rank relays: from each local rank whose VT vt it carries, to every other host's ranks.
    for (int x : topo.hostRanks[topo.hostOf[me]]) {
      if (x == me || topo.relayFor(x, vt) != me) continue;
      const size_t b = split(x, al).vt[vt].count * esz;
      if (b == 0) continue;
      for (int y = 0; y < v.nranks; y++) {
        if (topo.sameHost(x, y)) continue;
        addTask(plan, v, esz, vt, steps::forward(plan->edge({x, vt, y}), plan->edge({y, vt, x}), b, true));
        shareCut(plan);
      }
    }
  }
}

void planGather(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const Allocation& al = d.al;
  const size_t esz = dtypeSize(a.dtype);
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    const size_t o = al.vt[vt].offset * esz, b = al.vt[vt].count * esz;
    if (b == 0) continue;
    const char* in = static_cast<const char*>(a.sendbuff) + o;
    if (v.rank != a.root) {
      addTask(plan, v, esz, vt, steps::send(plan->edge({a.root, vt, -1}), in, b));
      continue;
    }
    for (int q = 0; q < v.nranks; q++) {
      char* dst = static_cast<char*>(a.recvbuff) + static_cast<size_t>(q) * a.count * esz + o;
      addTask(plan, v, esz, vt, q == a.root ? steps::copy(in, dst, b) : steps::recv(plan->edge({q, vt, -1}), dst, b));
    }
  }
}

void planScatter(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const Allocation& al = d.al;
  const size_t esz = dtypeSize(a.dtype);
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    const size_t o = al.vt[vt].offset * esz, b = al.vt[vt].count * esz;
    if (b == 0) continue;
    char* out = static_cast<char*>(a.recvbuff) + o;
    if (v.rank != a.root) {
      addTask(plan, v, esz, vt, steps::recv(plan->edge({a.root, vt, -1}), out, b));
      continue;
    }
    for (int q = 0; q < v.nranks; q++) {
      const char* src = static_cast<const char*>(a.sendbuff) + static_cast<size_t>(q) * a.count * esz + o;
      addTask(plan, v, esz, vt, q == a.root ? steps::copy(src, out, b) : steps::send(plan->edge({q, vt, -1}), src, b));
    }
  }
}

}  // namespace preccl
