// Ring algorithms over each VT's element range. Positions are ring positions (Topology::order); chunk c of
// a VT's range travels around the ring exactly as in NCCL's ring kernels.
#include "core/comm.h"
#include "core/plan.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// Whose plan a RingCtx builds: this rank's, or (a relay's view, Topology::rail) a local rank's, to copy
// the sends it makes to its ring successor on another host through this rank. A view's edges are these
// markers: only which steps send to `next` matters.
Conn kViewNext, kViewPrev;

struct RingCtx {
  precclComm* comm;
  const CctArgs& a;
  size_t esz;
  int n, p;
  int rank;
  bool view;
  Conn* next(int vt) const { return view ? &kViewNext : railEdge(comm, rank, comm->topo.ringNext(rank), vt); }
  Conn* prev(int vt) const { return view ? &kViewPrev : railEdge(comm, comm->topo.ringPrev(rank), rank, vt); }
  const char* in(size_t elem) const { return static_cast<const char*>(a.sendbuff) + elem * esz; }
  char* out(size_t elem) const { return static_cast<char*>(a.recvbuff) + elem * esz; }
};

Step step(Conn* recv, Conn* send, const char* src, char* dst, size_t bytes, bool reduce, bool post = false) {
  Step s;
  if (recv) s.recv[s.nrecv++] = recv;
  if (send) s.send[s.nsend++] = send;
  s.src = src;
  s.dst = dst;
  s.bytes = bytes;
  s.reduce = reduce;
  s.post = post;
  return s;
}

RingCtx ctx(precclComm* comm, const CctArgs& a, int rank = -1) {
  const bool view = rank >= 0 && rank != comm->rank;
  if (rank < 0) rank = comm->rank;
  return RingCtx{comm, a, dtypeSize(a.dtype), comm->nranks, comm->topo.posOf[rank], rank, view};
}

// The telemetry tail of a chain, for the rank at chain position d (0 = first, n-1 = last): the last rank
// sends one header-only slot to the first, and every rank but the one before the last forwards it, so
// the maxima the last rank holds reach everyone in n-1 hops.
// The cut comes before each rank's last data piece, so the last rank has heard everyone when the data
// ends (a single piece would leave nothing before it), and for the last rank itself at the tail.
void appendChainTail(const RingCtx& r, int d, Task* t) {
  if (!teleTailRuns(r.a, r.a.count * r.esz, r.n)) return;
  if (d < r.n - 1) cutBeforeLastPiece(t, r.comm->slotBytes, r.esz);
  else if (lastPieceOffset(*t, r.comm->slotBytes, r.esz) != 0) t->cutStep = 1;  // at the tail it sends
  Step s = step(d == r.n - 1 ? nullptr : r.prev(t->vt), d == r.n - 2 ? nullptr : r.next(t->vt), nullptr, nullptr, 0,
                false);
  s.headerOnly = true;
  t->steps.push_back(s);
}

using RingPlanner = void (*)(const RingCtx& r, const Allocation& al, CctPlan* plan);

// Under rail affinity the exit of a host (the rank whose ring successor is on another host) sends a VT
// whose NIC it does not own through the VT's relay, and the relay forwards it: the exit's sends to its
// successor, slot by slot, as the exit's own plan of the same call has them. The forward passes their
// telemetry on as it came and does not count as the relay's sends (the exit counted them).
void addRelayForwards(precclComm* comm, const CctArgs& a, const Allocation& al, RingPlanner fn, CctPlan* plan) {
  const Topology& t = comm->topo;
  if (!t.rail || comm->nranks == 1) return;
  for (int x : t.hostRanks[t.hostOf[comm->rank]]) {
    const int y = t.ringNext(x);
    if (x == comm->rank || t.sameHost(x, y)) continue;
    CctPlan view;
    fn(ctx(comm, a, x), al, &view);
    for (const Task& xt : view.tasks) {
      if (t.relayFor(x, xt.vt) != comm->rank) continue;
      Task f;
      f.vt = xt.vt;
      f.pieceBytes = xt.pieceBytes;
      for (const Step& xs : xt.steps) {
        if (std::find(xs.send, xs.send + xs.nsend, &kViewNext) == xs.send + xs.nsend) continue;
        Step s;
        s.recv[s.nrecv++] = comm->conns.relay(x, xt.vt, y);
        s.send[s.nsend++] = comm->conns.relay(y, xt.vt, x);
        s.bytes = xs.bytes;
        s.headerOnly = xs.headerOnly;
        s.relayed = true;
        f.steps.push_back(s);
      }
      if (!f.steps.empty()) plan->tasks.push_back(std::move(f));
    }
  }
}

void planRing(precclComm* comm, const CctArgs& a, const Allocation& al, RingPlanner fn, CctPlan* plan) {
  fn(ctx(comm, a), al, plan);
  addRelayForwards(comm, a, al, fn, plan);
}

}  // namespace

// Ring steps move at most one piece each: a round covers one piece of every chunk and runs all the
// round's steps before the next round starts (NCCL's loop over nranks * chunkSize). A step larger than
// the FIFO would deadlock the ring, every rank waiting to send while none has reached its receive step.
static size_t roundElems(precclComm* comm, Task& t, size_t esz, size_t capBytes) {
  t.pieceBytes = pieceBytes(comm->slotBytes, esz, capBytes);
  return t.pieceBytes / esz;
}

static void ringAllReduce(const RingCtx& r, const Allocation& al, CctPlan* plan) {
  precclComm* comm = r.comm;
  const int n = r.n, p = r.p;
  // Chunks are the call's blocks (plan.h ringBlockElems), not parts of the VT's range: an element's sum
  // starts at the same rank whichever VT carries it.
  const size_t b = ringBlockElems(r.esz);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    Task t;
    t.vt = v;
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count, end = o + cnt;
    t.pieceBytes = pieceBytes(comm->slotBytes, r.esz, al.vt[v].pieceCapBytes);
    if (n == 1) {
      t.steps.push_back(step(nullptr, nullptr, r.in(o), r.out(o), cnt * r.esz, true, true));
      plan->tasks.push_back(std::move(t));
      continue;
    }
    const size_t per = t.pieceBytes / r.esz;
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
    Conn *nx = r.next(v), *pv = r.prev(v);
    for (size_t ro = 0; ro < rounds; ro++) {
      // This round's piece of chunk c: a strided step, empty once the chunk's part is used up.
      auto part = [&](Conn* recv, Conn* send, int c, bool useIn, bool useOut, bool reduce, bool post) {
        const size_t k = ro * per, bytes = k < len[c] ? std::min(per, len[c] - k) * r.esz : 0;
        const size_t e = bytes ? ringChunkElem(first[c] + k, n, c, b) : o;
        Step s = step(recv, send, useIn ? r.in(e) : nullptr, useOut ? r.out(e) : nullptr, bytes, reduce, post);
        s.blockBytes = b * r.esz;
        s.strideBytes = b * n * r.esz;
        s.headBytes = (b - (first[c] + k) % b) * r.esz;
        return s;
      };
      // Reduce-scatter: after n-1 steps position p holds chunk p+1 fully reduced.
      t.steps.push_back(part(nullptr, nx, p, true, false, true, false));
      for (int s = 1; s < n - 1; s++) t.steps.push_back(part(pv, nx, (p - s + n) % n, true, false, true, false));
      if (ro == cutRound) t.cutStep = t.steps.size();
      t.steps.push_back(part(pv, nx, (p + 1) % n, true, true, true, true));
      // All-gather of the reduced chunks.
      for (int s = 1; s < n - 1; s++) t.steps.push_back(part(pv, nx, (p + 1 - s + n) % n, false, true, false, false));
      t.steps.push_back(part(pv, nullptr, (p + 2) % n, false, true, false, false));
    }
    plan->tasks.push_back(std::move(t));
  }
}

static void ringReduceScatter(const RingCtx& r, const Allocation& al, CctPlan* plan) {
  precclComm* comm = r.comm;
  const CctArgs& a = r.a;
  const int n = r.n, p = r.p;
  const auto& order = comm->topo.order;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    Task t;
    t.vt = v;
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count;
    const size_t per = roundElems(comm, t, r.esz, al.vt[v].pieceCapBytes);
    auto blockIn = [&](int c, size_t at) { return r.in(static_cast<size_t>(order[c]) * a.count + at); };
    if (n == 1) {
      t.steps.push_back(step(nullptr, nullptr, blockIn(0, o), r.out(o), cnt * r.esz, true, true));
      plan->tasks.push_back(std::move(t));
      continue;
    }
    Conn *nx = r.next(v), *pv = r.prev(v);
    for (size_t ro = 0; ro < cnt; ro += per) {
      const size_t at = o + ro, b = std::min(per, cnt - ro) * r.esz;
      if (ro > 0 && ro + per >= cnt) t.cutStep = t.steps.size();  // the last of >= 2 rounds: n-1 hops
      // Chunk c is the block of the rank at position c; position p finishes its own block last.
      t.steps.push_back(step(nullptr, nx, blockIn((p + n - 1) % n, at), nullptr, b, true));
      for (int s = 1; s < n - 1; s++) t.steps.push_back(step(pv, nx, blockIn((p + n - 1 - s) % n, at), nullptr, b, true));
      t.steps.push_back(step(pv, nullptr, blockIn(p, at), r.out(at), b, true, true));
    }
    plan->tasks.push_back(std::move(t));
  }
}

static void ringAllGather(const RingCtx& r, const Allocation& al, CctPlan* plan) {
  precclComm* comm = r.comm;
  const CctArgs& a = r.a;
  const int n = r.n, p = r.p;
  const auto& order = comm->topo.order;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    Task t;
    t.vt = v;
    const size_t o = al.vt[v].offset, cnt = al.vt[v].count;
    const size_t per = roundElems(comm, t, r.esz, al.vt[v].pieceCapBytes);
    auto blockOut = [&](int c, size_t at) { return r.out(static_cast<size_t>(order[c]) * a.count + at); };
    Conn* nx = n > 1 ? r.next(v) : nullptr;
    Conn* pv = n > 1 ? r.prev(v) : nullptr;
    for (size_t ro = 0; ro < cnt || ro == 0; ro += per) {
      const size_t at = o + ro, b = std::min(per, cnt - ro) * r.esz;
      if (n > 1 && ro > 0 && ro + per >= cnt) t.cutStep = t.steps.size();  // the last of >= 2 rounds: n-1 hops
      t.steps.push_back(step(nullptr, nx, r.in(at), blockOut(p, at), b, false));
      if (n > 1) {
        for (int s = 1; s < n - 1; s++) t.steps.push_back(step(pv, nx, nullptr, blockOut((p - s + n) % n, at), b, false));
        t.steps.push_back(step(pv, nullptr, nullptr, blockOut((p + 1) % n, at), b, false));
      }
      if (cnt == 0) break;
    }
    plan->tasks.push_back(std::move(t));
  }
}

static void ringBroadcast(const RingCtx& r, const Allocation& al, CctPlan* plan) {
  precclComm* comm = r.comm;
  const CctArgs& a = r.a;
  const int n = r.n;
  const int d = (r.p - comm->topo.posOf[a.root] + n) % n;  // distance from the root along the chain
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    Task t;
    t.vt = v;
    const size_t o = al.vt[v].offset, b = al.vt[v].count * r.esz;
    t.pieceBytes = pieceBytes(comm->slotBytes, r.esz, al.vt[v].pieceCapBytes);
    Conn* nx = d < n - 1 ? r.next(v) : nullptr;
    if (d == 0) t.steps.push_back(step(nullptr, nx, r.in(o), r.out(o), b, false));
    else t.steps.push_back(step(r.prev(v), nx, nullptr, r.out(o), b, false));
    appendChainTail(r, d, &t);
    plan->tasks.push_back(std::move(t));
  }
}

static void ringReduce(const RingCtx& r, const Allocation& al, CctPlan* plan) {
  precclComm* comm = r.comm;
  const CctArgs& a = r.a;
  const int n = r.n;
  // The chain starts right after the root and ends at it.
  const int d = (r.p - comm->topo.posOf[a.root] - 1 + 2 * n) % n;
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    Task t;
    t.vt = v;
    const size_t o = al.vt[v].offset, b = al.vt[v].count * r.esz;
    t.pieceBytes = pieceBytes(comm->slotBytes, r.esz, al.vt[v].pieceCapBytes);
    Conn* pv = d > 0 ? r.prev(v) : nullptr;
    if (d == n - 1) t.steps.push_back(step(pv, nullptr, r.in(o), r.out(o), b, true, true));
    else t.steps.push_back(step(pv, r.next(v), r.in(o), nullptr, b, true));
    appendChainTail(r, d, &t);
    plan->tasks.push_back(std::move(t));
  }
}

void planRingAllReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  planRing(comm, a, al, ringAllReduce, plan);
}

void planRingReduceScatter(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  planRing(comm, a, al, ringReduceScatter, plan);
}

void planRingAllGather(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  planRing(comm, a, al, ringAllGather, plan);
}

void planRingBroadcast(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  planRing(comm, a, al, ringBroadcast, plan);
}

void planRingReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  planRing(comm, a, al, ringReduce, plan);
}

}  // namespace preccl
