#include "core/run_attempt.h"

#include <algorithm>

#include "base/clock.h"
#include "core/comm.h"
#include "core/debug.h"
#include "core/probe.h"
#include "plan/coll_table.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// The edges the agreement's notices travel on besides the plan's (exec/executor.h NoticeEdges), built
// when the mask changes: the lowest live VT's to its noticeGraph peers, the `out` ones first, with their
// commitSchedule when every out edge is there, then every live VT's ring neighbours (the ways round a dead
// path once a flood widens); the masked VTs' ring neighbours are the spare edges.
const NoticeEdges& noticeEdges(precclComm* comm) {
  NoticeEdges& n = comm->notice;
  if (comm->noticeBuilt && comm->noticeMask == comm->liveMask) return n;
  n = NoticeEdges{};
  const Topology& t = comm->topo;
  auto add = [&](std::vector<Conn*>& e, int peer, int v) {
    if (Conn* c = peer != comm->rank ? comm->conns.at(peer, v) : nullptr; c && std::find(e.begin(), e.end(), c) == e.end())
      e.push_back(c);
  };
  if (comm->liveMask != 0) {
    const int v0 = __builtin_ctzll(comm->liveMask);  // < nVTs: a mask never takes every VT
    const NoticeGraph g = noticeGraph(t.posOf[comm->rank], comm->nranks);
    for (int p : g.out) add(n.notify, t.order[p], v0);
    // The ring's next is the first out edge: missing edges cost hops, never the flood's reach.
    add(n.notify, t.ringNext(comm->rank), v0);
    n.narrow = n.notify.size();
    if (n.narrow == g.out.size()) n.schedule = commitSchedule(t.posOf[comm->rank], t.order);
    for (int p : g.in) add(n.notify, t.order[p], v0);
    n.back = n.notify.size();
  }
  for (int v = 0; v < comm->nVTs; v++)
    for (int peer : {t.ringNext(comm->rank), t.ringPrev(comm->rank)}) add(isLive(comm->liveMask, v) ? n.notify : n.spare, peer, v);
  comm->noticeMask = comm->liveMask;
  comm->noticeBuilt = true;
  return n;
}

// Small enough for the caller's thread to drive its sockets (ExecCtx::drive).
bool smallCall(const precclComm* comm, const CctArgs& a) {
  size_t bytes = a.count * dtypeSize(a.dtype);
  for (const P2POp& op : a.p2p) bytes = std::max(bytes, op.count * dtypeSize(a.dtype));
  return bytes <= comm->cfg.smallMaxBytes;
}

// What the executor gets of the communicator for one attempt.
ExecCtx execCtx(precclComm* comm, const Cct& c, uint32_t attempt) {
  ExecCtx ctx;
  ctx.memory = &comm->call.memory;
  ctx.rank = comm->rank;
  ctx.nranks = comm->nranks;
  ctx.slotBytes = comm->slotBytes;
  ctx.timeoutNs = comm->cfg.timeoutMs * 1000000ull;
  ctx.bell = comm->bell;
  ctx.abort = &comm->abortFlag;
  ctx.vtStats = &comm->vtStats;
  ctx.edges = &comm->conns;
  ctx.epoch = comm->epoch;
  if (collRow(c.a.coll).collective && comm->pendingEpoch != kNoTeleEpoch && !c.rerun) {
    ctx.teleEpoch = comm->pendingEpoch;
    ctx.cargo = &comm->pendingRec;
  }
  ctx.agree = c.agree;
  ctx.attempt = attempt;
  ctx.dropStale = comm->aborts > 0;
  ctx.liveMask = comm->liveMask;
  ctx.detectMs = comm->cfg.detectMs;
  ctx.lastCommit = &comm->lastCommit;
  ctx.drive = !comm->cfg.lanes && !c.onDevice && smallCall(comm, c.a);
  if (c.agree) {
    ctx.defer.deferred = c.deferred;
    if (comm->pending.active && !c.rerun) {
      ctx.defer.pendingEpoch = comm->pending.epoch;
      ctx.defer.pendingAttempt = comm->pending.attempt;
    }
    ctx.notice = &noticeEdges(comm);
    ctx.report = [comm] {
      probeMasked(comm);  // what arrived on the masked edges during the call goes, so theirs can clear
      return maskedNotReady(comm);
    };
  }
  return ctx;
}

std::string vtList(uint64_t mask) {
  std::vector<int> vts;
  for (int v = 0; v < 64; v++)
    if ((mask >> v) & 1) vts.push_back(v);
  return fmt::format("{}", fmt::join(vts, ","));
}

// After an agreed abort: masks the failed VTs, or, when none would be left, keeps them for another try
// until PRECCL_TIMEOUT has passed since the first such abort (a host whose every NIC blinks recovers).
precclResult_t afterAbort(precclComm* comm, const ExecFault& fault, uint32_t attempt) {
  comm->aborts++;
  const uint64_t failed = fault.agreedVts & comm->liveMask;
  if (failed != 0 && failed != comm->liveMask) {
    mask(comm, failed);
    comm->noVtLeftSinceNs = 0;
    PRECCL_WARN("rank {}: epoch {} attempt {} aborted; masking VT(s) {} (dead paths), retrying on VT(s) {}", comm->rank,
                comm->epoch, attempt, vtList(failed), vtList(comm->liveMask));
    return precclSuccess;
  }
  // Every live VT failed, but masked ones may answer again on every rank (a rail that returned while the
  // other died): the retry runs on those.
  // (They rejoin before `failed` leaves, so that only VTs masked earlier can come back.)
  if (failed != 0) {
    if (const uint64_t back = rejoin(comm, fault.notReadyVts, comm->epoch); back != 0) {
      mask(comm, failed);
      comm->noVtLeftSinceNs = 0;
      PRECCL_WARN("rank {}: epoch {} attempt {} aborted; masking VT(s) {} (dead paths), retrying on VT(s) {}, which "
                  "answer again",
                  comm->rank, comm->epoch, attempt, vtList(failed), vtList(back));
      return precclSuccess;
    }
  }
  const uint64_t now = nowNs();
  if (comm->noVtLeftSinceNs == 0) comm->noVtLeftSinceNs = now;
  if (now - comm->noVtLeftSinceNs > comm->cfg.timeoutMs * 1000000ull) {
    const std::string msg = fmt::format(
        "rank {}: no VT is left: every live VT ({}) has a dead path, for more than PRECCL_TIMEOUT={} s; epoch {} attempt {}",
        comm->rank, vtList(comm->liveMask), comm->cfg.timeoutMs / 1000, comm->epoch, attempt);
    setError(comm, precclRemoteError, msg);
    comm->raiseAsync(precclRemoteError, msg);
    return precclRemoteError;
  }
  PRECCL_WARN("rank {}: epoch {} attempt {} aborted; every live VT ({}) has a dead path: trying them again", comm->rank,
              comm->epoch, attempt, vtList(comm->liveMask));
  return precclSuccess;
}

}  // namespace

precclResult_t runAttempt(precclComm* comm, const Cct& c, const Plan& plan, const Bound& b, uint32_t attempt, RunOut* out,
                          ExecFault* fault) {
  const ExecCtx ctx = execCtx(comm, c, attempt);
  const bool timed = comm->traceFd >= 0;
  const uint64_t t0 = timed ? nowNs() : 0;
  const precclResult_t res = c.onDevice     ? deviceExecutor().run(ctx, plan, b, out, fault)
                             : comm->cfg.lanes ? runLanes(ctx, plan, b, out, fault)
                                               : runHost(ctx, plan, b, out, fault);
  if (timed) comm->lastExecNs = nowNs() - t0;
  if (res == precclSuccess && c.agree && !fault->deferred) comm->lastCommit = std::move(fault->committed);
  return res;
}

precclResult_t joinPendingAbort(precclComm* comm, const Cct& pending, const Bound& b, uint64_t failed, ExecFault* fault) {
  ExecCtx ctx = execCtx(comm, pending, comm->pending.attempt);
  ctx.epoch = comm->pending.epoch;
  ctx.defer = DeferredCommit{};
  ctx.joinAbort = true;
  ctx.joinVts = failed;
  RunOut out;
  return runHost(ctx, Plan{}, b, &out, fault);
}

precclResult_t recoverAttempt(precclComm* comm, const ExecFault& fault, uint32_t attempt, precclResult_t res) {
  if (fault.aborted) return afterAbort(comm, fault, attempt);
  setError(comm, res, fault.what);
  comm->raiseAsync(res, fault.what);
  return res;
}

}  // namespace preccl
