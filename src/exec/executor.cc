#include "exec/executor.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "exec/agreement.h"
#include "policy/policy.h"
#include "transport/socket.h"
#include "transport/transport.h"

namespace preccl {

namespace {

enum class Adv { Moved, Blocked, Error, Abort };

// The agreement's edges: the ring neighbours' on the live VTs and every edge of the plan there, once each.
// The live VTs' edges (the notify list, then the plan's), then the spare ones (ExecCtx::spare).
std::vector<Conn*> agreementEdges(const ExecCtx& ctx, const CctPlan& plan) {
  std::vector<Conn*> e;
  auto add = [&](Conn* c) {
    if (c && isLive(ctx.liveMask, c->vt) && std::find(e.begin(), e.end(), c) == e.end()) e.push_back(c);
  };
  for (Conn* c : ctx.notify) add(c);
  for (const Task& t : plan.tasks)
    for (const Step& s : t.steps) {
      for (int i = 0; i < s.nrecv; i++) add(s.recv[i]);
      for (int i = 0; i < s.nsend; i++) add(s.send[i]);
    }
  for (Conn* c : ctx.spare)
    if (c && !isLive(ctx.liveMask, c->vt) && std::find(e.begin(), e.end(), c) == e.end()) e.push_back(c);
  return e;
}

size_t spareCount(const ExecCtx& ctx, const std::vector<Conn*>& edges) {
  return size_t(std::count_if(edges.begin(), edges.end(), [&](const Conn* c) { return !isLive(ctx.liveMask, c->vt); }));
}

struct Exec {
  const ExecCtx& ctx;
  CctPlan& plan;
  ExecFault* fault;
  Conn* waitingOn = nullptr;  // the edge the last blocked task waits for (for error messages)
  uint64_t startNs = nowNs();
  // The CCT's send edges whose slots a proxy still has to hand to the kernel, with the head last seen.
  std::vector<std::pair<Conn*, uint64_t>> staged;
  Agreement agree;
  uint64_t suspects = 0;  // VTs with a dead path among the agreement's edges, at the last look

  Exec(const ExecCtx& c, CctPlan& p, ExecFault* f)
      : ctx(c), plan(p), fault(f), agree(makeAgreement(c, p)) {
    for (const Task& t : plan.tasks)
      for (const Step& s : t.steps)
        for (int i = 0; i < s.nsend; i++)
          if (s.send[i]->stagedSends &&
              std::none_of(staged.begin(), staged.end(), [&](const auto& e) { return e.first == s.send[i]; }))
            staged.emplace_back(s.send[i], s.send[i]->send.released());
  }

  static Agreement makeAgreement(const ExecCtx& c, const CctPlan& p) {
    std::vector<Conn*> edges = agreementEdges(c, p);
    const size_t spare = spareCount(c, edges);
    return Agreement(c.rank, c.nranks, p.epoch, c.attempt, std::move(edges), c.notifyNarrow, c.dropStale, spare,
                     c.lastCommit);
  }

  precclResult_t fail(precclResult_t code, const Conn* c, std::string what) {
    fault->code = code;
    if (c) fault->peer = c->peer, fault->vt = c->vt, fault->nic = c->nic;
    fault->what = std::move(what);
    return code;
  }

  // PRECCL_TIMEOUT passed with nothing moving. The message names an edge either way: the one the last
  // blocked task waits for, or, once this rank's tasks are done, the one news of the silent ranks would
  // come on.
  precclResult_t timedOut() {
    const uint64_t s = ctx.timeoutNs / 1000000000ull;
    if (agree.phase() == Agreement::Phase::Running)
      return fail(precclRemoteError, waitingOn,
                  fmt::format("rank {}: no progress for {} s in epoch {} (waiting on rank {}, VT {}, {}); PRECCL_TIMEOUT={}",
                              ctx.rank, s, plan.epoch, waitingOn ? waitingOn->peer : -1, waitingOn ? waitingOn->vt : -1,
                              waitingOn ? waitingOn->path : "no edge", s));
    const Conn* q = agree.quietEdge();
    return fail(precclRemoteError, q,
                fmt::format("rank {}: no progress for {} s in epoch {} attempt {} while {} (not heard from rank(s) {}; "
                            "waiting on rank {}, VT {}, {}; VTs with a dead path here: {:#x}); PRECCL_TIMEOUT={}",
                            ctx.rank, s, plan.epoch, ctx.attempt, phaseName(), agree.missing(), q ? q->peer : -1,
                            q ? q->vt : -1, q ? q->path : "no edge", suspects, s));
  }

  // This rank's record of t's VT so far joins the CCT's own records (see Task::cutStep).
  void takeCut(Task& t, const VtCounters& stats) {
    t.cutTaken = true;
    if (!t.cutRelay) snapshot(t.vt, stats);
  }

  // A shared cut (Task::cutShared): false while some task of the VT has not reached its cut yet; the last
  // to arrive takes the snapshot.
  bool sharedCutPassed(Task& t, const VtCounters& stats) {
    uint32_t& left = plan.sharedCutsLeft[t.vt];
    if (!t.cutArrived) {
      t.cutArrived = true;
      if (--left == 0 && plan.sharedCutSnapshot[t.vt]) snapshot(t.vt, stats);
    }
    if (left != 0) return false;
    t.cutTaken = true;
    return true;
  }

  void snapshot(int vt, const VtCounters& stats) {
    VtRecord r;
    r.bytes = stats.lastBytes;
    r.elapsedNs = nowNs() - startNs;
    r.stalledNs = stats.lastStallNs;
    r.stalls = static_cast<uint32_t>(std::min<uint64_t>(stats.lastStalls, UINT32_MAX));
    maxInto(plan.now[vt], r);
  }

  bool started(const Task& t) const {
    for (size_t i = t.after.first; i < t.after.second; i++)
      if (!plan.tasks[i].done()) return false;
    return true;
  }

  // Moves one task forward as far as its FIFOs allow.
  Adv advance(Task& t) {
    bool moved = false;
    VtCounters& stats = (*ctx.vtStats)[t.vt];
    while (!t.done()) {
      if (!t.cutTaken && t.atCut()) {
        if (!t.cutShared) takeCut(t, stats);
        else {
          moved |= !t.cutArrived;  // arriving is progress (the last arrival frees the others); waiting is not
          if (!sharedCutPassed(t, stats)) return moved ? Adv::Moved : Adv::Blocked;
        }
      }
      Step& s = t.steps[t.cur];
      if (s.bytes == 0 && !s.headerOnly) {
        t.cur++;
        continue;
      }
      const size_t slotMax = t.piece(ctx.slotBytes) / plan.elemBytes * plan.elemBytes;
      const size_t piece = s.headerOnly ? 0 : std::min(slotMax, s.bytes - t.off);
      for (int i = 0; i < s.nrecv; i++) {
        FifoConsumer& r = s.recv[i]->recv;
        for (;;) {
          if (!r.ready()) {
            waitingOn = s.recv[i];
            return moved ? Adv::Moved : Adv::Blocked;
          }
          if (!Agreement::droppable(r.hdr(), plan.epoch, ctx.attempt, ctx.dropStale)) break;
          agree.dropStale(s.recv[i]);
        }
        const SlotHdr& h = r.hdr();
        if (h.kind == kSlotAbort && h.epoch == plan.epoch && h.attempt == ctx.attempt && ctx.agree) return Adv::Abort;
      }
      for (int i = 0; i < s.nsend; i++)
        if (!s.send[i]->send.hasRoom()) {
          // The in-band congestion signal: downstream has not freed a slot.
          if (!t.stalled) {
            t.stalled = true;
            t.stallStartNs = nowNs();
            stats.lastStalls++;
          }
          waitingOn = s.send[i];
          return moved ? Adv::Moved : Adv::Blocked;
        }
      if (t.stalled) {
        stats.lastStallNs += nowNs() - t.stallStartNs;
        t.stalled = false;
      }
      const void* ins[2];
      uint64_t passEpoch = CctPlan::kNoTele;  // a relay's forward: the telemetry its slot came with
      VtRecord passTele{};
      for (int i = 0; i < s.nrecv; i++) {
        Conn* c = s.recv[i];
        const SlotHdr& h = c->recv.hdr();
        if (h.epoch != plan.epoch || h.attempt != ctx.attempt || h.kind != kSlotData || h.bytes != piece ||
            (plan.checkDigest && h.digest != plan.digest)) {
          fail(precclInternalError, c,
               fmt::format("rank {}: VT {} from rank {}: got a slot of epoch {} attempt {} (kind {}, {} B, allocation "
                           "digest {:08x}), expected epoch {} attempt {} (data, {} B, digest {:08x}): ranks disagree on "
                           "the sequence of calls or on the allocation",
                           ctx.rank, t.vt, c->peer, h.epoch, h.attempt, h.kind, h.bytes, h.digest, plan.epoch, ctx.attempt,
                           piece, plan.digest));
          return Adv::Error;
        }
        ins[i] = c->recv.slot();
        if (s.relayed) {
          passEpoch = h.teleEpoch;
          passTele = h.tele;
        }
        if (h.teleEpoch == plan.epoch) maxInto(plan.now[t.vt], h.tele);
        else if (plan.teleEpoch != CctPlan::kNoTele && h.teleEpoch == plan.teleEpoch) maxInto(plan.cargo[t.vt], h.tele);
      }
      // The piece in runs that are contiguous in the caller's memory (one, unless the step is strided).
      for (size_t done = 0; done < piece;) {
        const size_t run = std::min(piece - done, s.runFrom(t.off + done)), mem = s.memOffset(t.off + done);
        const void* in[2];
        for (int i = 0; i < s.nrecv; i++) in[i] = static_cast<const char*>(ins[i]) + done;
        void* outs[3];
        int nout = 0;
        if (s.dst) outs[nout++] = s.dst + mem;
        for (int i = 0; i < s.nsend; i++) outs[nout++] = s.send[i]->send.slot() + done;
        const char* src = s.src ? s.src + mem : nullptr;
        if (s.reduce) {
          reduceCopy(plan.op, plan.dtype, run / plan.elemBytes, src, in, s.nrecv, outs, nout, s.post);
        } else {
          const void* from = src ? src : in[0];
          for (int i = 0; i < nout; i++)
            if (outs[i] != from) memcpy(outs[i], from, run);
        }
        done += run;
      }
      for (int i = 0; i < s.nsend; i++) {
        Conn* c = s.send[i];
        SlotHdr& h = c->send.hdr();
        h.epoch = plan.epoch;
        h.attempt = ctx.attempt;
        h.kind = kSlotData;
        h.bytes = static_cast<uint32_t>(piece);
        h.digest = plan.digest;
        if (s.relayed) {
          h.teleEpoch = passEpoch;
          h.tele = passTele;
        } else if (t.cutTaken) {
          h.teleEpoch = plan.epoch;
          h.tele = plan.now[t.vt];
        } else {
          h.teleEpoch = plan.teleEpoch;
          if (plan.teleEpoch != CctPlan::kNoTele) h.tele = plan.cargo[t.vt];
        }
        c->send.publish();
      }
      for (int i = 0; i < s.nrecv; i++) s.recv[i]->recv.release();
      if (!s.relayed || s.relayIsSend) stats.lastBytes += piece * s.nsend;
      if (s.relayed) stats.lastRelayed += piece;
      moved = true;
      t.off += piece;
      if (t.off == s.bytes) {
        t.cur++;
        t.off = 0;
      }
    }
    uint64_t& done = plan.vtDoneNs[t.vt];
    done = std::max(done, nowNs() - startNs);
    return Adv::Moved;
  }

  // Whether every slot this CCT published on a staged edge left the process (see Conn::stagedSends). A
  // proxy that released more since the last look is progress.
  bool flushed(bool* moved) {
    bool all = true;
    for (auto& [c, seen] : staged) {
      const uint64_t head = c->send.released();
      if (head != seen) *moved = true;
      seen = head;
      if (head != c->send.published()) {
        all = false;
        waitingOn = c;
      }
    }
    return all;
  }

  // Calls fn(conn, blocked) on every edge the running tasks' current steps use, and on every staged
  // edge with slots still to hand over; stops at the first that returns true.
  template <typename Fn>
  Conn* findEdge(Fn fn) {
    for (Task& t : plan.tasks) {
      if (t.done() || !started(t)) continue;
      const Step& s = t.steps[t.cur];
      for (int i = 0; i < s.nrecv; i++)
        if (fn(s.recv[i], !s.recv[i]->recv.ready())) return s.recv[i];
      for (int i = 0; i < s.nsend; i++)
        if (fn(s.send[i], !s.send[i]->send.hasRoom())) return s.send[i];
    }
    for (auto& [c, seen] : staged)
      if (c->send.released() != c->send.published() && fn(c, true)) return c;
    return nullptr;
  }

  // An edge the CCT still needs that its transport failed, or whose peer closed it (it exited or destroyed
  // its communicator): the data will never come. Slots already in a receive FIFO are still good. With
  // `anywhere`, also a failed edge outside the plan: a peer that died fails every call (there is no
  // masking of failed edges yet).
  precclResult_t brokenEdge(bool anywhere) {
    // A path's error (unreachable, timed out) is a suspect VT when the ranks can agree on masking it.
    auto peerGone = [this](const Conn& e) {
      return e.state() == Conn::Closed || (e.state() == Conn::Failed && !(ctx.agree && e.failedPath()));
    };
    Conn* c = findEdge([&](Conn* e, bool blocked) { return blocked && peerGone(*e); });
    if (!c && anywhere && ctx.edges)
      c = ctx.edges->find([&](const Conn& e) { return e.state() == Conn::Failed && peerGone(e) && isLive(ctx.liveMask, e.vt); });
    if (!c) return precclSuccess;
    return fail(precclRemoteError, c, goneEdgeWhy(ctx.rank, *c));
  }

  // Every edge a blocked task waits on goes to its transport for a look (a local peer that died has no
  // socket to report it). Only an edge with nothing left to take counts: a peer that finished the CCT and
  // exited may still have its last slots in our FIFO, and those are good.
  void checkStalled() {
    findEdge([](Conn* e, bool blocked) {
      if (blocked && e->owner && e->state() == Conn::Live) e->owner->checkStalled(*e);
      return false;
    });
  }

  // Looks at the path of every edge the attempt uses; returns an edge found dead (null: none) and keeps
  // `suspects`, the VTs of the dead ones, which this rank reports if it joins an abort.
  Conn* checkPaths() {
    Conn* dead = nullptr;
    suspects = 0;
    auto look = [&](Conn* e) {
      if (!e->owner) return;
      if (e->state() == Conn::Live) e->owner->checkPath(*e, ctx.detectMs);
      // A spare edge's path matters only to where the notices go (Agreement::allSent).
      if (!isLive(ctx.liveMask, e->vt)) return;
      if ((e->state() == Conn::Live && e->pathDown) || e->failedPath()) {
        suspects |= 1ull << e->vt;
        if (!dead) dead = e;
      }
    };
    for (Conn* e : agree.edges()) look(e);
    // Every VT whose edge to that peer leaves by the same NIC shares the path (VT v and v + K of K NICs):
    // it is as dead, even if it had nothing in flight to show it yet.
    if (dead && ctx.edges)
      ctx.edges->find([&](const Conn& e) {
        if (e.peer == dead->peer && e.nic == dead->nic && e.nic >= 0 && isLive(ctx.liveMask, e.vt)) suspects |= 1ull << e.vt;
        return false;
      });
    agree.setSuspects(suspects);
    return dead;
  }

  precclResult_t aborted() {
    fault->aborted = true;
    fault->agreedVts = agree.agreedVts();
    fault->notReadyVts = agree.notReadyVts();
    return fail(precclRemoteError, nullptr,
                fmt::format("rank {}: epoch {} attempt {} aborted by agreement; failed VT mask {:#x}", ctx.rank, plan.epoch,
                            ctx.attempt, agree.agreedVts()));
  }

  const char* phaseName() const {
    switch (agree.phase()) {
      case Agreement::Phase::Committing: return "committing";
      case Agreement::Phase::Aborting: return "agreeing on an abort";
      default: return "running";
    }
  }

  precclResult_t run() {
    const uint64_t timeoutNs = ctx.timeoutNs;
    uint64_t lastMoveNs = nowNs(), lastLivenessNs = lastMoveNs;
    int idle = 0;
    for (;;) {
      uint32_t seen = ctx.bell->seq.load(std::memory_order_seq_cst);
      bool moved = false, all = true;
      const bool running = agree.phase() == Agreement::Phase::Running;
      for (Task& t : plan.tasks) {
        if (!running) break;
        if (t.done()) continue;
        if (!started(t)) {
          all = false;
          continue;
        }
        Adv a = advance(t);
        if (a == Adv::Error) return fault->code;
        if (a == Adv::Abort) {
          agree.abort();
          moved = true;
          break;
        }
        moved |= a == Adv::Moved;
        all &= t.done();
      }
      if (!ctx.agree) {
        if (all && flushed(&moved)) return precclSuccess;
      } else {
        if (running && all && agree.phase() == Agreement::Phase::Running) agree.finish(ctx.report ? ctx.report() : 0);
        // While tasks run, the notices are looked for only when nothing moved (they are rare).
        if (agree.phase() != Agreement::Phase::Running || !moved) moved |= agree.pump();
        if (agree.phase() == Agreement::Phase::Committed) {
          fault->agreedVts = agree.agreedVts();
          fault->committed = agree.record();
          return precclSuccess;
        }
        if (agree.phase() == Agreement::Phase::Aborted) return aborted();
      }
      if (moved) {
        idle = 0;
        continue;
      }
      if (ctx.abort->load()) return fail(precclRemoteError, nullptr, fmt::format("rank {}: communicator aborted", ctx.rank));
      if (agree.phase() == Agreement::Phase::Running && brokenEdge(false) != precclSuccess) return fault->code;
      // Spin briefly (the peer is usually about to move), then yield, then sleep on the bell.
      idle++;
      if (idle < 64) continue;
      if (idle < 96) {
        sched_yield();
        continue;
      }
      bellWait(ctx.bell, seen, 20000);
      uint64_t now = nowNs();
      if (now - lastLivenessNs > 100000000ull) {
        lastLivenessNs = now;
        if (ctx.agree && ctx.report) agree.setNotReady(ctx.report());
        checkStalled();
        if (brokenEdge(true) != precclSuccess) return fault->code;
        if (Conn* dead = checkPaths()) {
          agree.widen();
          if (!ctx.agree)
            return fail(precclRemoteError, dead,
                        fmt::format("rank {}: the path of VT {} to rank {} ({}) is down: {}", ctx.rank, dead->vt, dead->peer,
                                    dead->path, dead->failedPath() ? dead->why() : dead->pathWhy));
          if (agree.phase() == Agreement::Phase::Running) {
            PRECCL_WARN("rank {}: VT {} to rank {} ({}) is down in epoch {} attempt {}: {}; aborting the attempt", ctx.rank,
                        dead->vt, dead->peer, dead->path, plan.epoch, ctx.attempt,
                        dead->failedPath() ? dead->why() : dead->pathWhy);
            agree.abort();
            idle = 0;
            continue;
          }
        }
      }
      // lastMoveNs is refreshed lazily: only sleeping passes look at the clock.
      if (idle == 96) lastMoveNs = now;
      if (now - lastMoveNs > timeoutNs) return timedOut();
    }
  }
};

}  // namespace

namespace {
DeviceExecutor gDevice;  // set once, before any communicator runs a CCT
}  // namespace

void setDeviceExecutor(const DeviceExecutor& d) { gDevice = d; }
const DeviceExecutor& deviceExecutor() { return gDevice; }

std::string goneEdgeWhy(int rank, const Conn& c) {
  if (c.state() == Conn::Failed) return fmt::format("rank {}: {} (peer rank {}, VT {}, {})", rank, c.why(), c.peer, c.vt, c.path);
  return fmt::format("rank {}: rank {} closed its connection of VT {} ({}) during a collective", rank, c.peer, c.vt, c.path);
}

void beginCounters(std::vector<VtCounters>& stats) {
  for (auto& s : stats) s.lastBytes = s.lastStalls = s.lastStallNs = s.lastRelayed = 0;
}

void endCounters(std::vector<VtCounters>& stats) {
  for (auto& s : stats) {
    s.bytes += s.lastBytes;
    s.stalls += s.lastStalls;
    s.stallNs += s.lastStallNs;
    s.relayed += s.lastRelayed;
  }
}

precclResult_t execute(const ExecCtx& ctx, CctPlan& plan, ExecFault* fault) {
  std::vector<VtCounters>& stats = *ctx.vtStats;
  beginCounters(stats);
  const int nVTs = static_cast<int>(stats.size());
  plan.vtDoneNs.assign(nVTs, 0);
  if (plan.teleEpoch != CctPlan::kNoTele) plan.cargo.resize(nVTs);
  plan.now.assign(nVTs, VtRecord{});
  Exec e(ctx, plan, fault);
  precclResult_t res = e.run();
  endCounters(stats);
  return res;
}

}  // namespace preccl
