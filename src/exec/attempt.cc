#include "exec/attempt.h"

#include <sched.h>

#include <algorithm>
#include <unordered_set>

#include "base/clock.h"
#include "base/log.h"
#include "exec/host_lanes.h"
#include "exec/task.h"
#include "policy/policy.h"
#include "transport/transport.h"

namespace preccl {

namespace {

constexpr uint64_t kLookNs = 100000000ull;  // how often the edges get a look

// The agreement's edges: NoticeEdges::notify (the commit's dissemination edges first) and every edge of
// the plan on the live VTs, once each, then the spare ones (NoticeEdges::spare).
std::vector<Conn*> agreementEdges(const ExecCtx& ctx, const Bound& b) {
  std::vector<Conn*> e;
  std::unordered_set<const Conn*> seen;  // an AlltoAll's plan has an edge to every peer on every VT
  auto add = [&](Conn* c, bool live) {
    if (c && isLive(ctx.liveMask, c->vt) == live && seen.insert(c).second) e.push_back(c);
  };
  if (ctx.notice)
    for (Conn* c : ctx.notice->notify) add(c, true);
  for (size_t i = 0; i < b.conns.size(); i++)
    if (b.sends[i] || b.recvs[i]) add(b.conns[i], true);
  if (ctx.notice)
    for (Conn* c : ctx.notice->spare) add(c, false);
  return e;
}

Agreement makeAgreement(const ExecCtx& ctx, const Bound& b) {
  std::vector<Conn*> edges = ctx.agree ? agreementEdges(ctx, b) : std::vector<Conn*>{};
  const size_t spare = size_t(std::count_if(edges.begin(), edges.end(), [&](const Conn* c) { return !isLive(ctx.liveMask, c->vt); }));
  return Agreement(ctx.rank, ctx.nranks, ctx.epoch, ctx.attempt, std::move(edges), ctx.notice ? ctx.notice->narrow : 0,
                   ctx.dropStale, spare, ctx.lastCommit, ctx.notice ? &ctx.notice->schedule : nullptr, ctx.defer);
}

bool recvBlocked(const Conn& c) {
  const FifoCtrl* f = c.recv.fifo().ctrl;
  return counterLoad(f->tail) == counterLoad(f->head);
}
bool sendBlocked(const Conn& c) {
  const FifoCtrl* f = c.send.fifo().ctrl;
  return counterLoad(f->tail) - counterLoad(f->head) >= c.send.fifo().nslots;
}
bool sendUnflushed(const Conn& c) {
  const FifoCtrl* f = c.send.fifo().ctrl;
  return counterLoad(f->tail) != counterLoad(f->head);
}

}  // namespace

std::string goneEdgeWhy(int rank, const Conn& c) {
  if (c.state() == Conn::Failed) return fmt::format("rank {}: {} (peer rank {}, VT {}, {})", rank, c.why(), c.peer, c.vt, c.path);
  return fmt::format("rank {}: rank {} closed its connection of VT {} ({}) during a collective", rank, c.peer, c.vt, c.path);
}

Attempt::Attempt(const ExecCtx& ctx, const Plan& plan, const Bound& b, ExecFault* fault)
    : ctx_(ctx),
      plan_(plan),
      b_(b),
      fault_(fault),
      tasks_(ctx.memory ? ctx.memory->tasks : own_.tasks),
      vts_(ctx.memory ? ctx.memory->vts : own_.vts),
      agree_(makeAgreement(ctx, b)) {
  tasks_.assign(plan.tasks.size(), TaskRun{});
  vts_.assign(ctx.vtStats->size(), VtRun{});
  for (size_t v = 0; v < vts_.size(); v++) {
    VtRun& r = vts_[v];
    if (ctx.teleEpoch != kNoTeleEpoch && ctx.cargo && v < ctx.cargo->size()) r.cargo = (*ctx.cargo)[v];
    if (v < plan.sharedCuts.size()) r.sharedCutsLeft = plan.sharedCuts[v];
    if (v < plan.sharedCutSnapshot.size()) r.sharedSnapshot = plan.sharedCutSnapshot[v];
  }
  Run& r = run_;
  r.steps = plan.steps.data();
  r.tasks = plan.tasks.data();
  r.ntasks = static_cast<int>(plan.tasks.size());
  r.send = b.send.data();
  r.recv = b.recv.data();
  r.task = tasks_.data();
  r.vt = vts_.data();
  r.epoch = ctx.epoch;
  r.attempt = ctx.attempt;
  r.digest = plan.digest;
  r.checkDigest = plan.checkDigest;
  r.agree = ctx.agree;
  r.dropStale = ctx.dropStale;
  r.defer = ctx.defer;
  r.dtype = plan.dtype;
  r.esz = plan.esz;
  r.op = plan.op;
  r.teleEpoch = ctx.teleEpoch;
  r.startNs = nowNs();
  if (ctx.lastCommit) r.last = ctx.lastCommit->view();
  for (Conn* c : b.staged) staged_.emplace_back(c, c->send.released());
  std::vector<Transport*> owners;
  auto own = [&](const Conn* c) {
    if (c && c->owner && std::find(owners.begin(), owners.end(), c->owner) == owners.end()) owners.push_back(c->owner);
  };
  for (const Conn* c : b.conns) own(c);
  for (const Conn* c : agree_.edges()) own(c);
  if (ctx.drive) drivers_ = std::move(owners);
  else
    for (Transport* t : owners) t->driving(false);  // an earlier small call left the sockets with this thread
  // A path found silent in an earlier attempt is looked at again now: the flag keeps the agreement's notices
  // off the edge (Agreement::allSent), and nothing else refreshes it before this attempt's first look.
  for (Conn* e : lookEdges())
    if (e->pathDown && e->owner && e->state() == Conn::Live) e->owner->checkPath(*e, ctx.detectMs);
  if (ctx.joinAbort) {
    agree_.setNotReady(ctx.report ? ctx.report() : 0);
    agree_.abort(ctx.joinVts);
  }
}

precclResult_t Attempt::fail(precclResult_t code, const Conn* c, std::string what) {
  fault_->code = code;
  if (c) fault_->peer = c->peer, fault_->vt = c->vt, fault_->nic = c->nic;
  fault_->what = std::move(what);
  return code;
}

const Conn* Attempt::waitingOn() const {
  auto edgeOf = [&](int ti) -> const Conn* {
    const int e = ti >= 0 ? tasks_[size_t(ti)].waitEdge : -1;
    return e >= 0 ? b_.conns[size_t(e)] : nullptr;
  };
  if (const Conn* c = edgeOf(lastBlocked_)) return c;
  for (size_t i = 0; i < tasks_.size(); i++)
    if (hostVisibleLoad(&tasks_[i].cur) != TaskRun::kFinished)
      if (const Conn* c = edgeOf(int(i))) return c;
  return nullptr;
}

precclResult_t Attempt::aborted() { return fail(precclRemoteError, nullptr, fmt::format("rank {}: communicator aborted", ctx_.rank)); }

// PRECCL_TIMEOUT passed with nothing moving. The message names an edge either way: the one a blocked task
// waits for, or, once this rank's tasks are done, the one news of the silent ranks would come on.
precclResult_t Attempt::timedOut() {
  const uint64_t s = ctx_.timeoutNs / 1000000000ull;
  if (agree_.phase() == Agreement::Phase::Running) {
    const Conn* w = waitingOn();
    return fail(precclRemoteError, w,
                fmt::format("rank {}: no progress for {} s in epoch {} (waiting on rank {}, VT {}, {}); PRECCL_TIMEOUT={}",
                            ctx_.rank, s, ctx_.epoch, w ? w->peer : -1, w ? w->vt : -1, w ? w->path : "no edge", s));
  }
  const Conn* q = agree_.quietEdge();
  return fail(precclRemoteError, q,
              fmt::format("rank {}: no progress for {} s in epoch {} attempt {} while {} (not heard from rank(s) {}; "
                          "waiting on rank {}, VT {}, {}; VTs with a dead path here: {:#x}); PRECCL_TIMEOUT={}",
                          ctx_.rank, s, ctx_.epoch, ctx_.attempt, phaseName(), agree_.missing(), q ? q->peer : -1,
                          q ? q->vt : -1, q ? q->path : "no edge", suspects_, s));
}

precclResult_t Attempt::badSlot(int ti) {
  const Task& t = plan_.tasks[size_t(ti)];
  const TaskRun& me = tasks_[size_t(ti)];
  const Conn* c = me.waitEdge >= 0 ? b_.conns[size_t(me.waitEdge)] : nullptr;
  if (!c) return fail(precclInternalError, nullptr, fmt::format("rank {}: VT {}: a slot that is not this call's", ctx_.rank, t.vt));
  const Step& s = plan_.step(t, uint32_t(me.cur));
  const uint64_t piece = s.headerOnly ? 0 : std::min<uint64_t>(t.piece, s.bytes - me.off);
  const SlotHdr& h = c->recv.hdr();
  return fail(precclInternalError, c,
              fmt::format("rank {}: VT {} from rank {}: got a slot of epoch {} attempt {} (kind {}, {} B, allocation "
                          "digest {:08x}), expected epoch {} attempt {} (data, {} B, digest {:08x}): ranks disagree on "
                          "the sequence of calls or on the allocation",
                          ctx_.rank, t.vt, c->peer, h.epoch, h.attempt, h.kind, h.bytes, h.digest, ctx_.epoch,
                          ctx_.attempt, piece, plan_.digest));
}

// The host runner's turn: every task that can move, moved as far as it goes.
bool Attempt::stepTasks(bool* all, precclResult_t* err) {
  HostLanes lanes;
  bool moved = false;
  for (int i = 0; i < run_.ntasks; i++) {
    if (tasks_[size_t(i)].cur == TaskRun::kFinished) continue;
    switch (advance(lanes, run_, i)) {
      case Adv::Done: moved = true; break;
      case Adv::Moved:
        moved = true;
        *all = false;
        lastBlocked_ = i;
        break;
      case Adv::Blocked:
        *all = false;
        lastBlocked_ = i;
        break;
      case Adv::Abort:
        agree_.abortAt(b_.conns[size_t(tasks_[size_t(i)].waitEdge)]);
        *all = false;
        return true;
      case Adv::BadSlot:
        *err = badSlot(i);
        return false;
      case Adv::Answer:
        agree_.dropStale(b_.conns[size_t(tasks_[size_t(i)].waitEdge)]);
        moved = true;
        *all = false;
        break;
    }
  }
  return moved;
}

bool Attempt::allFinished() const {
  return std::all_of(tasks_.begin(), tasks_.end(), [](const TaskRun& t) { return t.cur == TaskRun::kFinished; });
}

// Whether every slot this CCT published on a staged edge left the process (see Conn::stagedSends). A proxy
// that released more since the last look is progress.
bool Attempt::flushed(bool* moved) {
  bool all = true;
  for (auto& [c, seen] : staged_) {
    const uint64_t head = c->send.released();
    if (head != seen) *moved = true;
    seen = head;
    if (head != c->send.published()) all = false;
  }
  return all;
}

// Calls fn(conn) on every edge a running task waits on in its current step (a receive FIFO with nothing in
// it, a send FIFO with no room: the counters as the FIFO has them, whoever holds the ends), and on every
// staged edge with slots still to hand over; stops at the first that returns true.
template <typename Fn> Conn* Attempt::findBlocked(Fn fn) {
  for (size_t i = 0; i < tasks_.size(); i++) {
    const int cur = hostVisibleLoad(&tasks_[i].cur);
    const Task& t = plan_.tasks[i];
    if (cur < 0 || uint32_t(cur) >= t.nsteps) continue;
    const Step& s = plan_.step(t, uint32_t(cur));
    for (int j = 0; j < s.nrecv; j++)
      if (Conn* c = b_.conns[size_t(s.recv[j])]; recvBlocked(*c) && fn(c)) return c;
    for (int j = 0; j < s.nsend; j++)
      if (Conn* c = b_.conns[size_t(s.send[j])]; sendBlocked(*c) && fn(c)) return c;
  }
  for (auto& [c, seen] : staged_)
    if (sendUnflushed(*c) && fn(c)) return c;
  return nullptr;
}

// An edge the CCT still needs that its transport failed, or whose peer closed it (it exited or destroyed
// its communicator): the data will never come. Slots already in a receive FIFO are still good. With
// `anywhere`, also a failed edge outside the plan on a live VT: a peer that died fails every call.
precclResult_t Attempt::brokenEdge(bool anywhere) {
  // A path's error (unreachable, timed out) is a suspect VT when the ranks can agree on masking it.
  auto peerGone = [this](const Conn& e) {
    return e.state() == Conn::Closed || (e.state() == Conn::Failed && !(ctx_.agree && e.failedPath()));
  };
  Conn* c = findBlocked([&](Conn* e) { return peerGone(*e); });
  if (!c && anywhere && ctx_.edges)
    c = ctx_.edges->find([&](const Conn& e) { return e.state() == Conn::Failed && peerGone(e) && isLive(ctx_.liveMask, e.vt); });
  if (!c) return precclSuccess;
  return fail(precclRemoteError, c, goneEdgeWhy(ctx_.rank, *c));
}

// Every edge a blocked task waits on goes to its transport for a look (a local peer that died has no socket
// to report it). Only an edge with nothing left to take counts: a peer that finished the CCT and exited may
// still have its last slots in our FIFO, and those are good.
void Attempt::checkStalled() {
  findBlocked([](Conn* e) {
    if (e->owner && e->state() == Conn::Live) e->owner->checkStalled(*e);
    return false;
  });
}

// Looks at the path of every edge the attempt uses; returns an edge found dead (null: none) and keeps
// `suspects_`, the VTs of the dead ones, which this rank reports if it joins an abort.
Conn* Attempt::checkPaths() {
  Conn* dead = nullptr;
  suspects_ = 0;
  auto look = [&](Conn* e) {
    if (!e->owner) return;
    if (e->state() == Conn::Live) e->owner->checkPath(*e, ctx_.detectMs);
    // A spare edge's path matters only to where the notices go (Agreement::allSent).
    if (!isLive(ctx_.liveMask, e->vt)) return;
    if ((e->state() == Conn::Live && e->pathDown) || e->failedPath()) {
      suspects_ |= 1ull << e->vt;
      if (!dead) dead = e;
    }
  };
  for (Conn* e : lookEdges()) look(e);
  // Every VT whose edge to that peer leaves by the same NIC shares the path (VT v and v + K of K NICs): it
  // is as dead, even if it had nothing in flight to show it yet.
  if (dead && ctx_.edges)
    ctx_.edges->find([&](const Conn& e) {
      if (e.peer == dead->peer && e.nic == dead->nic && e.nic >= 0 && isLive(ctx_.liveMask, e.vt)) suspects_ |= 1ull << e.vt;
      return false;
    });
  agree_.setSuspects(suspects_);
  return dead;
}

precclResult_t Attempt::look(bool* abortNow) {
  *abortNow = false;
  if (ctx_.agree && ctx_.report) agree_.setNotReady(ctx_.report());
  if (agree_.phase() == Agreement::Phase::Committing && nowNs() - committingSinceNs_ > uint64_t(ctx_.detectMs) * 1000000)
    agree_.reachBack(ctx_.notice ? ctx_.notice->back : 0);
  checkStalled();
  if (brokenEdge(true) != precclSuccess) return fault_->code;
  if (Conn* dead = checkPaths()) {
    agree_.widen();
    const std::string why = dead->failedPath() ? dead->why() : dead->pathWhy;
    if (!ctx_.agree)
      return fail(precclRemoteError, dead,
                  fmt::format("rank {}: the path of VT {} to rank {} ({}) is down: {}", ctx_.rank, dead->vt, dead->peer,
                              dead->path, why));
    if (agree_.phase() == Agreement::Phase::Running && !deferredDone_) {
      PRECCL_WARN("rank {}: VT {} to rank {} ({}) is down in epoch {} attempt {}: {}; aborting the attempt", ctx_.rank,
                  dead->vt, dead->peer, dead->path, ctx_.epoch, ctx_.attempt, why);
      *abortNow = true;
    }
  }
  return precclSuccess;
}

precclResult_t Attempt::agreedAbort() {
  fault_->aborted = true;
  fault_->agreedVts = agree_.agreedVts();
  fault_->notReadyVts = agree_.notReadyVts();
  return fail(precclRemoteError, nullptr,
              fmt::format("rank {}: epoch {} attempt {} aborted by agreement; failed VT mask {:#x}", ctx_.rank, ctx_.epoch,
                          ctx_.attempt, agree_.agreedVts()));
}

precclResult_t Attempt::pendingAborted() {
  fault_->pendingAborted = true;
  fault_->failedVts = agree_.failedSeen() | suspects_;
  return fail(precclRemoteError, nullptr,
              fmt::format("rank {}: epoch {} attempt {} given up: the pending epoch {} attempt {} is being aborted",
                          ctx_.rank, ctx_.epoch, ctx_.attempt, ctx_.defer.pendingEpoch, ctx_.defer.pendingAttempt));
}

const char* Attempt::phaseName() const {
  switch (agree_.phase()) {
    case Agreement::Phase::Committing: return "committing";
    case Agreement::Phase::Aborting: return "agreeing on an abort";
    default: return "running";
  }
}

void Attempt::driving(bool on) {
  for (Transport* t : drivers_) t->driving(on);
}

// This thread's turn at the sockets: the edges a task waits on and the staged ones with slots to hand
// over, and once the tasks are done the agreement's.
bool Attempt::drive() {
  bool moved = false;
  findBlocked([&](Conn* e) {
    if (e->owner) moved |= e->owner->drive(*e);
    return false;
  });
  if (agree_.phase() != Agreement::Phase::Running)
    for (Conn* e : agree_.edges())
      if (e->owner) moved |= e->owner->drive(*e);
  return moved;
}

precclResult_t Attempt::loop(bool hostTasks) {
  uint64_t lastMoveNs = nowNs(), lastLookNs = lastMoveNs;
  int idle = 0;
  // The sockets stay with this thread after the call (the next small call drives them again at once);
  // a call that does not drive, or this thread's sleep, gives them back to the progress thread.
  driving(true);
  for (;;) {
    const uint32_t seen = ctx_.bell->seq.load(std::memory_order_seq_cst);
    bool moved = false, all = true;
    const bool running = agree_.phase() == Agreement::Phase::Running;
    if (running) {
      if (hostTasks) {
        precclResult_t err = precclSuccess;
        moved = stepTasks(&all, &err);
        if (err != precclSuccess) return err;
      } else {
        all = allFinished();
      }
    }
    if (!ctx_.agree || deferredDone_) {
      if (all && flushed(&moved)) {
        fault_->deferred = deferredDone_;
        return precclSuccess;
      }
    } else {
      if (running && all && agree_.phase() == Agreement::Phase::Running) {
        if (ctx_.defer.deferred) {
          // Done here: a peer that still needs this rank's part asks for it by an abort that this rank
          // meets in its next call (the input is kept). What is left is handing over the last slots.
          deferredDone_ = true;
          continue;
        }
        agree_.finish(ctx_.report ? ctx_.report() : 0);
        committingSinceNs_ = nowNs();
      }
      // While tasks run, the notices are looked for only when nothing moved (they are rare).
      if (agree_.phase() != Agreement::Phase::Running || !moved) moved |= agree_.pump();
      if (agree_.phase() == Agreement::Phase::Committed) {
        fault_->agreedVts = agree_.agreedVts();
        fault_->committed = agree_.record();
        return precclSuccess;
      }
      if (agree_.phase() == Agreement::Phase::Aborted) return agreedAbort();
      if (agree_.phase() == Agreement::Phase::PendingAborted) return pendingAborted();
    }
    if (!moved && !drivers_.empty()) moved = drive();
    if (moved) {
      idle = 0;
      continue;
    }
    if (ctx_.abort->load()) return aborted();
    if (agree_.phase() == Agreement::Phase::Running && brokenEdge(false) != precclSuccess) return fault_->code;
    // Spin briefly (the peer is usually about to move), then yield, then sleep on the bell.
    idle++;
    if (idle < 64) {
      // A driving thread polls its sockets, and lets another process have the core between looks: on a
      // host with more ranks than cores the peer it waits for may need it.
      if (!drivers_.empty()) sched_yield();
      continue;
    }
    if (idle < 96) {
      sched_yield();
      continue;
    }
    driving(false);
    bellWait(ctx_.bell, seen, 20000);
    driving(true);
    const uint64_t now = nowNs();
    if (now - lastLookNs > kLookNs) {
      lastLookNs = now;
      bool abortNow = false;
      if (look(&abortNow) != precclSuccess) return fault_->code;
      if (abortNow) {
        agree_.abort();
        idle = 0;
        continue;
      }
    }
    // lastMoveNs is refreshed lazily: only sleeping passes look at the clock.
    if (idle == 96) lastMoveNs = now;
    if (now - lastMoveNs > ctx_.timeoutNs) return timedOut();
  }
}

void Attempt::results(RunOut* out) {
  std::vector<VtCounters>& stats = *ctx_.vtStats;
  const size_t n = vts_.size();
  out->now.assign(n, VtRecord{});
  out->cargo.assign(n, VtRecord{});
  out->vtDoneNs.assign(n, 0);
  for (size_t v = 0; v < n; v++) {
    const VtRun& r = vts_[v];
    VtCounters& c = stats[v];
    c.lastBytes = r.bytes;
    c.lastStalls = r.stalls;
    c.lastStallNs = r.stallNs;
    c.lastRelayed = r.relayed;
    c.bytes += r.bytes;
    c.stalls += r.stalls;
    c.stallNs += r.stallNs;
    c.relayed += r.relayed;
    out->now[v] = r.now;
    out->cargo[v] = r.cargo;
    out->vtDoneNs[v] = r.doneNs;
  }
}

}  // namespace preccl
