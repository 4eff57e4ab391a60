// Ring algorithms over each VT's element range. Positions are ring positions (Topology::order); chunk c of
// a VT's range travels around the ring exactly as in NCCL's ring kernels.
#include <algorithm>

#include "plan/layout.h"
#include "plan/planners.h"
#include "plan/steps.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// One rank's ring plan: this rank's, or (a relay's look, Topology::rail) a local rank's, whose sends to
// its successor on another host this rank forwards.
struct Ring {
  const PlanView& v;
  const CctArgs& a;
  Plan* plan;
  int rank;
  size_t esz;
  int n, p;
  Ring(const PlanView& view, const CctArgs& args, Plan* out, int who)
      : v(view), a(args), plan(out), rank(who), esz(dtypeSize(args.dtype)), n(view.nranks), p(view.topo->posOf[who]) {}
  int32_t next(int vt) const { return plan->edge(railEdgeName(*v.topo, rank, rank, v.topo->ringNext(rank), vt)); }
  int32_t prev(int vt) const { return plan->edge(railEdgeName(*v.topo, rank, v.topo->ringPrev(rank), rank, vt)); }
  const char* in(size_t elem) const { return static_cast<const char*>(a.sendbuff) + elem * esz; }
  char* out(size_t elem) const { return static_cast<char*>(a.recvbuff) + elem * esz; }
  size_t piece(const VtRange& r) const { return pieceBytes(v.slotBytes, esz, r.pieceCapBytes); }
};

using RingPlanner = void (*)(const Ring& r, const Allocation& al);

// The telemetry tail of a chain, for the rank at chain position d (0 = first, n-1 = last): the last rank
// sends one header-only slot to the first, and every rank but the one before the last forwards it, so
// the maxima the last rank holds reach everyone in n-1 hops.
// The cut comes before each rank's last data piece, so the last rank has heard everyone when the data
// ends (a single piece would leave nothing before it), and for the last rank itself at the tail.
void appendChainTail(const Ring& r, int d, int vt) {
  if (!teleTailRuns(r.a, r.n)) return;
  Task& t = r.plan->last();
  if (d < r.n - 1) cutBeforeLastPiece(*r.plan, &t);
  else if (lastPieceOffset(*r.plan, t) != 0) t.cutStep = 1;  // at the tail it sends
  r.plan->add(steps::header({d == r.n - 1 ? -1 : r.prev(vt)}, {d == r.n - 2 ? -1 : r.next(vt)}));
}

// Ring steps move at most one piece each: a round covers one piece of every chunk and runs all the
// round's steps before the next round starts (NCCL's loop over nranks * chunkSize). A step larger than
// the FIFO would deadlock the ring, every rank waiting to send while none has reached its receive step.
void ringAllReduce(const Ring& r, const Allocation& al) {
  const int n = r.n, p = r.p;
  // Chunks are the call's blocks (layout.h ringBlockElems), not parts of the VT's range: an element's sum
  // starts at the same rank whichever VT carries it.
  const size_t b = ringBlockElems(r.esz);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count, end = o + cnt;
    Task& t = r.plan->begin(v, r.piece(al.vt[v]));
    if (n == 1) {
      r.plan->add(steps::reduceCopy(r.in(o), r.out(o), cnt * r.esz));
      continue;
    }
    const size_t per = t.piece / r.esz;
    std::vector<size_t> first(n), len(n);
    size_t longest = 0, shortest = SIZE_MAX;
    for (int c = 0; c < n; c++) {
      first[c] = ringChunkBelow(o, n, c, b);
      len[c] = ringChunkBelow(end, n, c, b) - first[c];
      longest = std::max(longest, len[c]);
      shortest = std::min(shortest, len[c]);
    }
    const size_t rounds = (longest + per - 1) / per;
    // The cut: the all-gather of the last round in which every chunk has a piece (n-1 hops) carries this
    // CCT's records to every rank.
    const size_t cutRound = shortest > 0 ? (shortest + per - 1) / per - 1 : SIZE_MAX;
    const int32_t nx = r.next(v), pv = r.prev(v);
    for (size_t ro = 0; ro < rounds; ro++) {
      // This round's piece of chunk c: where it starts in memory, its bytes (none once the chunk's part is
      // used up), and the strided layout of the call's blocks.
      auto part = [&](int c, Step s) {
        const size_t k = ro * per, bytes = k < len[c] ? std::min(per, len[c] - k) * r.esz : 0;
        const size_t e = bytes ? ringChunkElem(first[c] + k, n, c, b) : o;
        if (s.src) s.src = r.in(e);
        if (s.dst) s.dst = r.out(e);
        s.bytes = bytes;
        s.blockBytes = b * r.esz;
        s.strideBytes = b * n * r.esz;
        s.headBytes = (b - (first[c] + k) % b) * r.esz;
        r.plan->add(s);
      };
      const char* in = r.in(o);
      char* out = r.out(o);
      // Reduce-scatter: after n-1 steps position p holds chunk p+1 fully reduced.
      part(p, steps::reduceSend(nx, in, 0));
      for (int s = 1; s < n - 1; s++) part((p - s + n) % n, steps::recvReduceSend({pv}, in, nx, 0));
      if (ro == cutRound) r.plan->last().cutStep = r.plan->last().nsteps;
      part((p + 1) % n, steps::recvReduceCopySend({pv}, in, out, {nx}, 0));
      // All-gather of the reduced chunks.
      for (int s = 1; s < n - 1; s++) part((p + 1 - s + n) % n, steps::recvCopySend(pv, out, {nx}, 0));
      part((p + 2) % n, steps::recv(pv, out, 0));
    }
  }
}

void ringReduceScatter(const Ring& r, const Allocation& al) {
  const int n = r.n, p = r.p;
  const auto& order = r.v.topo->order;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count;
    Task& t = r.plan->begin(v, r.piece(al.vt[v]));
    const size_t per = t.piece / r.esz;
    auto blockIn = [&](int c, size_t at) { return r.in(static_cast<size_t>(order[c]) * r.a.count + at); };
    if (n == 1) {
      r.plan->add(steps::reduceCopy(blockIn(0, o), r.out(o), cnt * r.esz));
      continue;
    }
    const int32_t nx = r.next(v), pv = r.prev(v);
    for (size_t ro = 0; ro < cnt; ro += per) {
      const size_t at = o + ro, b = std::min(per, cnt - ro) * r.esz;
      if (ro > 0 && ro + per >= cnt) r.plan->last().cutStep = r.plan->last().nsteps;  // the last of >= 2 rounds: n-1 hops
      // Chunk c is the block of the rank at position c; position p finishes its own block last.
      r.plan->add(steps::reduceSend(nx, blockIn((p + n - 1) % n, at), b));
      for (int s = 1; s < n - 1; s++) r.plan->add(steps::recvReduceSend({pv}, blockIn((p + n - 1 - s) % n, at), nx, b));
      r.plan->add(steps::recvReduceCopy({pv}, blockIn(p, at), r.out(at), b));
    }
  }
}

void ringAllGather(const Ring& r, const Allocation& al) {
  const int n = r.n, p = r.p;
  const auto& order = r.v.topo->order;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count;
    Task& t = r.plan->begin(v, r.piece(al.vt[v]));
    const size_t per = t.piece / r.esz;
    auto blockOut = [&](int c, size_t at) { return r.out(static_cast<size_t>(order[c]) * r.a.count + at); };
    const int32_t nx = n > 1 ? r.next(v) : -1, pv = n > 1 ? r.prev(v) : -1;
    for (size_t ro = 0; ro < cnt || ro == 0; ro += per) {
      const size_t at = o + ro, b = std::min(per, cnt - ro) * r.esz;
      if (n > 1 && ro > 0 && ro + per >= cnt) r.plan->last().cutStep = r.plan->last().nsteps;  // the last of >= 2 rounds: n-1 hops
      r.plan->add(steps::copySend(r.in(at), blockOut(p, at), {nx}, b));
      if (n > 1) {
        for (int s = 1; s < n - 1; s++) r.plan->add(steps::recvCopySend(pv, blockOut((p - s + n) % n, at), {nx}, b));
        r.plan->add(steps::recv(pv, blockOut((p + 1) % n, at), b));
      }
      if (cnt == 0) break;
    }
  }
}

void ringBroadcast(const Ring& r, const Allocation& al) {
  const int n = r.n;
  const int d = (r.p - r.v.topo->posOf[r.a.root] + n) % n;  // distance from the root along the chain
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset, b = al.vt[v].count * r.esz;
    r.plan->begin(v, r.piece(al.vt[v]));
    const int32_t nx = d < n - 1 ? r.next(v) : -1;
    if (d == 0) r.plan->add(steps::copySend(r.in(o), r.out(o), {nx}, b));
    else r.plan->add(steps::recvCopySend(r.prev(v), r.out(o), {nx}, b));
    appendChainTail(r, d, v);
  }
}

void ringReduce(const Ring& r, const Allocation& al) {
  const int n = r.n;
  // The chain starts right after the root and ends at it.
  const int d = (r.p - r.v.topo->posOf[r.a.root] - 1 + 2 * n) % n;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t o = al.vt[v].offset, b = al.vt[v].count * r.esz;
    r.plan->begin(v, r.piece(al.vt[v]));
    const int32_t pv = d > 0 ? r.prev(v) : -1;
    if (d == n - 1) r.plan->add(steps::recvReduceCopy({pv}, r.in(o), r.out(o), b));
    else r.plan->add(steps::recvReduceSend({pv}, r.in(o), r.next(v), b));
    appendChainTail(r, d, v);
  }
}

// Under rail affinity the exit of a host (the rank whose ring successor is on another host) sends a VT
// whose NIC it does not own through the VT's relay, and the relay forwards it: the exit's sends to its
// successor, slot by slot, as the exit's own plan of the same call has them. The forward passes their
// telemetry on as it came and does not count as the relay's sends (the exit counted them).
void addRelayForwards(const PlanView& v, const CctArgs& a, const Allocation& al, RingPlanner fn, Plan* plan) {
  const Topology& t = *v.topo;
  if (!t.rail || v.nranks == 1) return;
  for (int x : t.hostRanks[t.hostOf[v.rank]]) {
    const int y = t.ringNext(x);
    if (x == v.rank || t.sameHost(x, y)) continue;
    Plan exit;
    fn(Ring(v, a, &exit, x), al);
    for (const Task& xt : exit.tasks) {
      if (t.relayFor(x, xt.vt) != v.rank) continue;
      const int32_t toNext = exit.edge(railEdgeName(t, x, x, y, xt.vt));
      bool begun = false;
      for (uint32_t k = 0; k < xt.nsteps; k++) {
        const Step& xs = exit.step(xt, k);
        if (std::find(xs.send, xs.send + xs.nsend, toNext) == xs.send + xs.nsend) continue;
        if (!begun) plan->begin(xt.vt, xt.piece), begun = true;
        plan->add(steps::forward(plan->edge({x, xt.vt, y}), plan->edge({y, xt.vt, x}), xs.bytes, false, xs.headerOnly));
      }
    }
  }
}

void planRing(const PlanView& v, const CctArgs& a, const Decision& d, RingPlanner fn, Plan* plan) {
  fn(Ring(v, a, plan, v.rank), d.al);
  addRelayForwards(v, a, d.al, fn, plan);
}

}  // namespace

void planRingAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  planRing(v, a, d, ringAllReduce, plan);
}
void planRingReduceScatter(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  planRing(v, a, d, ringReduceScatter, plan);
}
void planRingAllGather(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  planRing(v, a, d, ringAllGather, plan);
}
void planRingBroadcast(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  planRing(v, a, d, ringBroadcast, plan);
}
void planRingReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  planRing(v, a, d, ringReduce, plan);
}

}  // namespace preccl
