#include "core/settle.h"

#include <algorithm>

#include "core/comm.h"
#include "core/probe.h"
#include "core/trace.h"
#include "plan/coll_table.h"

namespace preccl {

namespace {

bool liveVt(const precclComm* comm, int v) { return isLive(comm->liveMask, v); }

// Whether this CCT's slots carried every rank's cargo to every rank on VT v (the collective table's rule,
// plan/coll_table.h). Every rank computes the same answer from the same allocation, so all agree on whether
// the epoch's telemetry is complete.
bool carried(const precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, int v) {
  if (comm->nranks == 1) return true;
  CarryQuery q;
  q.nranks = comm->nranks;
  q.algo = plan.algo;
  q.args = &a;
  q.range = d.al.vt[size_t(v)];
  q.vt = v;
  q.sendersNow = &plan.senders;
  q.sendersThen = &comm->pendingSenders;
  return collRow(a.coll).carries(q);
}

// Known everywhere: epoch's records become the latest telemetry, one row of per-VT maxima over all ranks
// (the model uses the slowest rank's elapsed time and the largest byte count, so the maxima are its input).
void setLatestTelemetry(precclComm* comm, uint64_t epoch, const std::vector<VtRecord>& maxima) {
  comm->tele.reset(epoch, 1, comm->nVTs);
  // A masked VT's row holds only what this rank saw: empty everywhere, so that every rank holds the same.
  for (int v = 0; v < comm->nVTs; v++) comm->tele.at(0, v) = liveVt(comm, v) ? maxima[v] : VtRecord{};
  comm->haveTele = true;
}

// After a collective whose plan had cuts, its own records are known everywhere: they are the latest
// telemetry, and older cargo is superseded. Otherwise the epoch whose cargo rode on it becomes known
// everywhere (if it was complete), and this CCT's own records wait for the next collective. A CCT that
// could not complete the cargo (a small sync between large calls, a Gather) keeps carrying the older
// epoch instead, with what it heard added: its own records matter less than the large call's, and
// dropping those would cost the policy a CCT.
void collectTelemetry(precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, const RunOut& out) {
  if (plan.cuts) {
    setLatestTelemetry(comm, comm->epoch, out.now);
    comm->pendingEpoch = kNoTeleEpoch;
    comm->pendingRec.clear();
    comm->pendingSenders.clear();
    return;
  }
  if (comm->pendingEpoch != kNoTeleEpoch) {
    bool complete = true;
    for (int v = 0; v < comm->nVTs; v++) complete &= !liveVt(comm, v) || carried(comm, a, d, plan, v);
    if (complete) {
      setLatestTelemetry(comm, comm->pendingEpoch, out.cargo);
    } else if (plan.senders.empty()) {
      comm->pendingRec = out.cargo;  // pendingEpoch stays
      comm->pendingSenders.clear();  // what every rank heard is in its cargo now
      return;
    }
    // An AlltoAll whose senders could not carry the older epoch (rail affinity: a rank that sent on a VT
    // then sends nothing there now) drops it, and its own records ride on the next CCT instead: they
    // matter as much, and the ranks that would carry the older ones may never send on that VT again.
  }
  comm->pendingEpoch = comm->epoch;
  comm->pendingSenders = plan.senders;
  comm->pendingRec.assign(comm->nVTs, VtRecord{});
  for (int v = 0; v < comm->nVTs; v++) {
    const VtCounters& c = comm->vtStats[v];
    VtRecord& r = comm->pendingRec[v];
    r.bytes = c.lastBytes;
    r.elapsedNs = c.lastBytes ? out.vtDoneNs[v] : 0;
    r.stalledNs = c.lastStallNs;
    r.stalls = static_cast<uint32_t>(std::min<uint64_t>(c.lastStalls, UINT32_MAX));
  }
}

}  // namespace

void settleCct(precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, const RunOut& out,
               const ExecFault& committed, bool agreed) {
  comm->noVtLeftSinceNs = 0;
  if (agreed) rejoin(comm, committed.agreedVts, comm->epoch + 1);
  if (!collRow(a.coll).collective) return;  // the epoch counts collectives only
  collectTelemetry(comm, a, d, plan, out);
  const size_t total = std::max<size_t>(1, d.al.total());
  for (int v = 0; v < comm->nVTs && v < static_cast<int>(d.al.vt.size()); v++)
    comm->vtStats[v].lastShare = static_cast<double>(d.al.vt[v].count) / total;
  traceCct(comm, a, d, plan, out);
  comm->epoch++;
}

}  // namespace preccl
