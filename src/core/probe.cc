#include "core/probe.h"

#include "core/comm.h"
#include "core/debug.h"
#include "exec/slot_rules.h"
#include "policy/policy.h"
#include "transport/transport.h"

namespace preccl {

namespace {

uint64_t maskedVts(const precclComm* comm) {
  const uint64_t all = comm->nVTs >= 64 ? ~0ull : (1ull << comm->nVTs) - 1;
  return all & ~comm->liveMask;
}

// Every edge of the VTs in `vts`, relay edges included.
template <typename Fn>
void forEachEdge(precclComm* comm, uint64_t vts, Fn fn) {
  comm->conns.find([&](Conn& c) {
    if (c.vt >= 0 && c.vt < 64 && ((vts >> c.vt) & 1)) fn(c);
    return false;
  });
}

}  // namespace

void probeMasked(precclComm* comm) {
  const uint64_t masked = maskedVts(comm);
  if (masked == 0) return;
  forEachEdge(comm, masked, [&](Conn& c) {
    // Nothing of a masked VT is read: all of it is stale or a probe, and leaving it would stop the peer's
    // transport from delivering the probe behind it.
    while (c.recv.ready() && droppableSlot(c.recv.hdr(), comm->epoch, 0, true)) c.recv.release();
    if (c.probesSent > 0 || c.state() != Conn::Live || !c.send.hasRoom()) return;
    SlotHdr& h = c.send.hdr();
    h = SlotHdr{};
    h.epoch = comm->epoch;
    h.kind = kSlotProbe;
    h.teleEpoch = kNoTeleEpoch;
    c.send.publish();
    c.probesSent++;
  });
}

uint64_t maskedNotReady(precclComm* comm) {
  uint64_t notReady = 0;
  forEachEdge(comm, maskedVts(comm), [&](Conn& c) {
    if (c.probesSent == 0 || !c.owner || !c.owner->pathClear(c)) notReady |= 1ull << c.vt;
  });
  return notReady;
}

uint64_t rejoin(precclComm* comm, uint64_t notReadyAnywhere, uint64_t fromEpoch) {
  const uint64_t back = maskedVts(comm) & ~notReadyAnywhere;
  if (back == 0) return 0;
  comm->liveMask |= back;
  // Every rank found these paths clear: a silence an attempt found on them before the masking is stale,
  // and left standing it would keep the agreement's notices off the edge (Agreement::allSent), which may
  // be the only one they go by.
  forEachEdge(comm, back, [](Conn& c) {
    c.probesSent = 0;
    c.pathDown = false;
    c.pathWhy.clear();
  });
  for (int v = 0; v < comm->nVTs; v++)
    if ((back >> v) & 1) {
      comm->vtStateEpoch[v] = fromEpoch;
      PRECCL_WARN("rank {}: VT {} answers on every rank again: it rejoins from epoch {}", comm->rank, v, fromEpoch);
    }
  return back;
}

void mask(precclComm* comm, uint64_t failed) {
  comm->liveMask &= ~failed;
  forEachEdge(comm, failed, [&](Conn& c) {
    c.probesSent = 0;
    if (c.owner) c.owner->redial(c, comm->epoch);
  });
  for (int v = 0; v < comm->nVTs; v++)
    if ((failed >> v) & 1) comm->vtStateEpoch[v] = comm->epoch;
}

int vtState(const precclComm* comm, int v) {
  if (!isLive(comm->liveMask, v)) return precclVtMasked;
  return vtProbing(comm->cfg.policy, comm->policy.model, v, comm->vtStateEpoch[v]) ? precclVtProbing : precclVtLive;
}

const char* vtStateName(int state) {
  return state == precclVtMasked ? "masked" : state == precclVtProbing ? "probing" : "live";
}

}  // namespace preccl
