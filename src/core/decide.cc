#include "core/decide.h"

#include <algorithm>
#include <mutex>

#include "base/clock.h"
#include "core/comm.h"
#include "plan/coll_table.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// A send's split over the VTs, alike on both ranks: AlltoAll's current shares for the same per-peer size
// (every rank holds the same, AlltoAll being collective), read only. Send/Recv carry no telemetry of their
// own; grouped, they are how PyTorch runs an AlltoAll with uneven splits. Under rail affinity a transfer
// to another host uses only the VTs whose NIC the sender owns (the relay is not part of the call; the
// direct edges are there when every one of those VTs is masked).
Allocation sendAllocation(const precclComm* comm, const AllocRequest& req, int sender, bool remote) {
  uint64_t mask = comm->liveMask;
  if (remote && comm->topo.rail && (mask & comm->topo.ownVts(sender, comm->nVTs)) != 0)
    mask &= comm->topo.ownVts(sender, comm->nVTs);
  if (comm->cfg.policy == PolicyKind::Static) return equalAllocation(req, mask);
  AllocKey key;
  key.coll = static_cast<uint8_t>(Coll::AlltoAll);
  return currentShares(comm->policy, req, key, mask);
}

}  // namespace

PlanAlgo chooseAlgo(const precclComm* comm, const CctArgs& a) {
  const CollRow& row = collRow(a.coll);
  const size_t bytes = a.count * dtypeSize(a.dtype);
  const Algo want = comm->cfg.algo;
  // Within one slot the fewest hops win (Auto and Doubling): no policy either, the call is latency.
  if (row.doubling && (want == Algo::Auto || want == Algo::Doubling) && comm->nranks > 1 && bytes > 0 &&
      bytes <= std::min<size_t>(comm->cfg.smallMaxBytes, comm->slotBytes))
    return PlanAlgo::Doubling;
  if (!row.tree || want == Algo::Ring) return PlanAlgo::Ring;
  if (want == Algo::Tree) return PlanAlgo::Tree;
  // Auto: the tree's log(n) latency wins for small calls; the ring's bandwidth for the rest.
  return row.autoTree && comm->nranks > 2 && bytes <= comm->cfg.treeMaxBytes ? PlanAlgo::Tree : PlanAlgo::Ring;
}

AllocKey allocKey(const precclComm* comm, const CctArgs& a, bool tree) {
  const int n = comm->nranks;
  const int hostRanks = comm->topo.rail ? int(comm->topo.hostRanks[comm->topo.hostOf[comm->rank]].size()) : 1;
  const WireBytes w = n == 1 ? WireBytes{} : collRow(a.coll).wire(n, tree, hostRanks);
  AllocKey k;
  k.coll = static_cast<uint8_t>(a.coll);
  k.algo = tree ? 1 : 0;
  k.wireNum = w.num;
  k.wireDen = w.den;
  return k;
}

void decideCct(precclComm* comm, const CctArgs& a, Decision* out) {
  Decision& d = *out;
  d.ops.clear();
  const CollRow& row = collRow(a.coll);
  const size_t esz = dtypeSize(a.dtype);
  if (!row.collective) {
    d.algo = PlanAlgo::Ring;
    d.al.vt.clear();
    for (const P2POp& op : a.p2p) {
      if (op.peer == comm->rank) {  // a copy: no VT
        d.ops.emplace_back();
        continue;
      }
      AllocRequest req;
      req.count = op.count;
      req.elemBytes = esz;
      req.nVTs = comm->nVTs;
      d.ops.push_back(sendAllocation(comm, req, op.isSend ? comm->rank : op.peer, !comm->topo.sameHost(comm->rank, op.peer)));
    }
    return;
  }
  d.algo = chooseAlgo(comm, a);
  const bool timed = comm->traceFd >= 0;  // the clock reads are for the trace: none on the common path
  const uint64_t t0 = timed ? nowNs() : 0;
  AllocRequest req;
  req.count = a.count;
  req.elemBytes = esz;
  req.nVTs = comm->nVTs;
  if (d.algo == PlanAlgo::Doubling) oneVtAllocation(req, __builtin_ctzll(comm->liveMask), &d.al);  // the lowest live VT
  else if (!row.shifts || comm->cfg.policy == PolicyKind::Static) d.al = equalAllocation(req, comm->liveMask);
  else
    d.al = decide(comm->cfg.policy, comm->policy, req, allocKey(comm, a, d.algo == PlanAlgo::Tree), comm->haveTele ? &comm->tele : nullptr,
                  comm->liveMask);
  if (timed) comm->lastDecideNs = nowNs() - t0;
}

PlanView planView(const precclComm* comm) {
  PlanView v;
  v.rank = comm->rank;
  v.nranks = comm->nranks;
  v.nVTs = comm->nVTs;
  v.topo = &comm->topo;
  v.slotBytes = comm->slotBytes;
  v.relay = comm->relay;
  v.liveMask = comm->liveMask;
  v.checkDigest = comm->cfg.checkAlloc;
  return v;
}

bool estimateCctNs(precclComm* comm, const CctArgs& a, uint64_t* ns) {
  *ns = 0;
  std::lock_guard<std::mutex> lock(comm->execMutex);  // the policy state changes under it
  const bool p2p = !collRow(a.coll).collective;
  size_t count = a.count;
  if (p2p) {  // what this rank sends, in bytes (a group's P2P counts are bytes)
    count = 0;
    for (const P2POp& op : a.p2p)
      if (op.isSend) count += op.count * dtypeSize(a.dtype);
  }
  if (count == 0 || comm->nranks == 1) return true;  // nothing crosses a VT
  const bool tree = !p2p && chooseAlgo(comm, a) == PlanAlgo::Tree;
  AllocRequest req;
  req.count = count;
  req.elemBytes = p2p ? 1 : dtypeSize(a.dtype);
  req.nVTs = comm->nVTs;
  const AllocKey key = p2p ? AllocKey{} : allocKey(comm, a, tree);
  const Allocation al = comm->cfg.policy == PolicyKind::Static || p2p
                            ? equalAllocation(req, comm->liveMask)
                            : currentShares(comm->policy, req, key, comm->liveMask);
  for (int v = 0; v < comm->nVTs && v < static_cast<int>(al.vt.size()); v++) {
    const uint64_t bytes = al.vt[v].count * req.elemBytes * key.wireNum / key.wireDen;
    if (bytes == 0) continue;
    const uint64_t t = modelEstimateNs(comm->policy.model, v, bytes);
    if (t == 0) return false;  // nothing known yet
    *ns = std::max(*ns, t);
  }
  return true;
}

}  // namespace preccl
