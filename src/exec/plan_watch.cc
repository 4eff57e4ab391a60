#include "exec/plan_watch.h"

#include "base/clock.h"
#include "base/log.h"
#include "exec/dev_atomic.h"
#include "policy/policy.h"
#include "transport/socket.h"
#include "transport/transport.h"

namespace preccl {

namespace {

constexpr uint64_t kLookNs = 100000000ull;  // how often the edges get a look, as the host executor's

precclResult_t fail(ExecFault* fault, precclResult_t code, const Conn* c, std::string what) {
  fault->code = code;
  if (c) fault->peer = c->peer, fault->vt = c->vt, fault->nic = c->nic;
  fault->what = std::move(what);
  return code;
}

// As the host executor's look (device/executor.cc, brokenEdge): an edge a running task waits on whose
// peer is gone (its transport failed it, or the peer closed it; a local peer that died is found by the
// transport's look at such an edge), or a failed edge anywhere on a live VT. Only an edge with nothing
// left to take counts: a peer that finished the CCT and exited may still have its last slots in our FIFO.
const Conn* brokenEdge(const ExecCtx& ctx, const CompiledPlan& c, int* progress) {
  std::vector<int> now(c.tasks.size());
  for (size_t i = 0; i < now.size(); i++) now[i] = gpu::hostVisibleLoad(&progress[i]);
  c.blockedEdge(now.data(), [](Conn* e) {
    if (e->owner && e->state() == Conn::Live) e->owner->checkStalled(*e);
    return false;
  });
  if (const Conn* e = c.blockedEdge(now.data(), [](Conn* e) { return e->state() != Conn::Live; })) return e;
  if (!ctx.edges) return nullptr;
  return ctx.edges->find([&](const Conn& e) { return e.state() == Conn::Failed && isLive(ctx.liveMask, e.vt); });
}

precclResult_t taskFault(const ExecCtx& ctx, const CompiledPlan& c, int task, ExecFault* fault) {
  const gpu::TaskEnd& e = c.ends[task];
  const Conn* at = c.edgeOf(task, e.step);
  const int vt = c.tasks[task].vt, peer = at ? at->peer : -1;
  const std::string path = at ? at->path : "no edge";
  const uint64_t s = ctx.timeoutNs / 1000000000ull;
  switch (gpu::PrimEnd(e.end)) {
    case gpu::PrimEnd::BadSlot:
      return fail(fault, precclInternalError, at,
                  fmt::format("rank {}: VT {} from rank {}: got a slot that is not epoch {} attempt {}'s data of the "
                              "expected size (allocation digest {:08x}): ranks disagree on the sequence of calls or on "
                              "the allocation",
                              ctx.rank, vt, peer, c.dev.epoch, c.dev.attempt, c.dev.digest));
    case gpu::PrimEnd::Aborted:
      return fail(fault, precclRemoteError, nullptr, fmt::format("rank {}: communicator aborted", ctx.rank));
    default:
      return fail(fault, precclRemoteError, at,
                  fmt::format("rank {}: no progress for {} s in epoch {} (waiting on rank {}, VT {}, {}{}); PRECCL_TIMEOUT={}",
                              ctx.rank, s, c.dev.epoch, peer, vt, path,
                              e.end == gpu::TaskEnd::kWaitedAfter ? ", for the tasks before it" : "", s));
  }
}

// Every slot the CCT published on a staged edge has left the process.
precclResult_t flushStaged(const ExecCtx& ctx, const CompiledPlan& c, ExecFault* fault) {
  uint64_t lastMove = nowNs();
  for (Conn* e : c.sendEdges) {
    if (!e->stagedSends) continue;
    uint64_t seen = e->send.released();
    while (seen != e->send.published()) {
      const uint32_t bell = ctx.bell->seq.load(std::memory_order_seq_cst);
      if (e->state() != Conn::Live)
        return fail(fault, precclRemoteError, e,
                    fmt::format("rank {}: the edge of VT {} to rank {} ({}) ended with slots still to send: {}", ctx.rank,
                                e->vt, e->peer, e->path, e->state() == Conn::Failed ? e->why() : "closed"));
      if (ctx.abort->load()) return fail(fault, precclRemoteError, nullptr, fmt::format("rank {}: communicator aborted", ctx.rank));
      bellWait(ctx.bell, bell, 20000);
      const uint64_t head = e->send.released(), now = nowNs();
      if (head != seen) lastMove = now;
      seen = head;
      if (now - lastMove > ctx.timeoutNs)
        return fail(fault, precclRemoteError, e,
                    fmt::format("rank {}: no progress for {} s in epoch {} handing slots to the proxy (rank {}, VT {}, {})",
                                ctx.rank, ctx.timeoutNs / 1000000000ull, c.dev.epoch, e->peer, e->vt, e->path));
    }
  }
  return precclSuccess;
}

}  // namespace

precclResult_t watchPlan(const ExecCtx& ctx, const CompiledPlan& c, volatile int* stop, int* progress,
                         const std::function<bool(int* failedTask)>& poll, int* failedTask, ExecFault* fault) {
  precclResult_t res = precclSuccess;
  uint64_t lastLook = nowNs();
  while (poll(failedTask)) {
    if (*stop) continue;
    if (*failedTask >= 0) {
      *stop = 1;  // one task cannot finish: the CCT cannot, and the others need not wait it out
      continue;
    }
    if (ctx.abort->load()) {
      *stop = 1;
      res = fail(fault, precclRemoteError, nullptr, fmt::format("rank {}: communicator aborted", ctx.rank));
      continue;
    }
    if (const uint64_t now = nowNs(); now - lastLook > kLookNs) {
      lastLook = now;
      if (const Conn* dead = brokenEdge(ctx, c, progress)) {
        *stop = 1;
        res = fail(fault, precclRemoteError, dead, goneEdgeWhy(ctx.rank, *dead));
      }
    }
  }
  return res;
}

precclResult_t finishPlan(const ExecCtx& ctx, CompiledPlan& c, CctPlan& plan, precclResult_t res, int failedTask,
                          ExecFault* fault) {
  settleCompiled(c, plan, *ctx.vtStats);
  if (res == precclSuccess && failedTask >= 0) res = taskFault(ctx, c, failedTask, fault);
  if (res == precclSuccess) res = flushStaged(ctx, c, fault);
  endCounters(*ctx.vtStats);
  return res;
}

}  // namespace preccl
