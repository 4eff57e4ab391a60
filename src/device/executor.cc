#include "device/executor.h"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "core/debug.h"
#include "transport/socket.h"

namespace preccl {

namespace {

// A killed process stays a zombie until its parent reaps it, and kill(pid, 0) still succeeds on a
// zombie: look at its state too.
bool processAlive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "r");
  if (!f) return true;  // no /proc: rely on kill() and the timeout
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* close = strrchr(buf, ')');  // "pid (comm) S ...": the state follows the last ')'
  return !(close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X'));
}

enum class Adv { Moved, Blocked, Error };

struct Exec {
  precclComm* comm;
  CctPlan& plan;
  std::string err;
  Conn* waitingOn = nullptr;  // the edge the last blocked task waits for (for error messages)
  uint64_t startNs = nowNs();
  std::vector<Conn*> staged;  // the CCT's send edges whose slots a proxy still has to hand to the kernel

  Exec(precclComm* c, CctPlan& p) : comm(c), plan(p) {
    for (const Task& t : plan.tasks)
      for (const Step& s : t.steps)
        for (int i = 0; i < s.nsend; i++)
          if (s.send[i]->stagedSends && std::find(staged.begin(), staged.end(), s.send[i]) == staged.end())
            staged.push_back(s.send[i]);
  }

  bool recvReady(Conn* c) {
    if (c->recvTailSeen > c->recvHead) return true;
    c->recvTailSeen = c->recv.ctrl->tail.load(std::memory_order_acquire);
    return c->recvTailSeen > c->recvHead;
  }
  bool sendReady(Conn* c) {
    if (c->sendTail - c->sendHeadSeen < c->send.nslots) return true;
    c->sendHeadSeen = c->send.ctrl->head.load(std::memory_order_acquire);
    return c->sendTail - c->sendHeadSeen < c->send.nslots;
  }

  // This rank's record of t's VT so far joins the CCT's own records (see Task::cutStep).
  void takeCut(Task& t, const VtCounters& stats) {
    t.cutTaken = true;
    if (t.cutRelay) return;
    VtRecord r;
    r.bytes = stats.lastBytes;
    r.elapsedNs = nowNs() - startNs;
    r.stalledNs = stats.lastStallNs;
    r.stalls = static_cast<uint32_t>(std::min<uint64_t>(stats.lastStalls, UINT32_MAX));
    maxInto(plan.now[t.vt], r);
  }

  // Moves one task forward as far as its FIFOs allow.
  Adv advance(Task& t) {
    bool moved = false;
    VtCounters& stats = comm->vtStats[t.vt];
    while (!t.done()) {
      if (!t.cutTaken && t.atCut()) takeCut(t, stats);
      Step& s = t.steps[t.cur];
      if (s.bytes == 0 && !s.headerOnly) {
        t.cur++;
        continue;
      }
      const size_t slotMax = t.piece(comm->slotBytes) / plan.elemBytes * plan.elemBytes;
      const size_t piece = s.headerOnly ? 0 : std::min(slotMax, s.bytes - t.off);
      for (int i = 0; i < s.nrecv; i++)
        if (!recvReady(s.recv[i])) {
          waitingOn = s.recv[i];
          return moved ? Adv::Moved : Adv::Blocked;
        }
      for (int i = 0; i < s.nsend; i++)
        if (!sendReady(s.send[i])) {
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
      for (int i = 0; i < s.nrecv; i++) {
        Conn* c = s.recv[i];
        const SlotHdr& h = c->recv.hdr(c->recvHead);
        if (h.epoch != plan.epoch || h.bytes != piece || (plan.checkDigest && h.digest != plan.digest)) {
          err = fmt::format(
              "rank {}: VT {} from rank {}: got a slot of epoch {} ({} B, allocation digest {:08x}), expected epoch {} "
              "({} B, digest {:08x}): ranks disagree on the sequence of calls or on the allocation",
              comm->rank, t.vt, c->peer, h.epoch, h.bytes, h.digest, plan.epoch, piece, plan.digest);
          return Adv::Error;
        }
        ins[i] = c->recv.slot(c->recvHead);
        if (h.teleEpoch == plan.epoch) maxInto(plan.now[t.vt], h.tele);
        else if (plan.teleEpoch != CctPlan::kNoTele && h.teleEpoch == plan.teleEpoch) maxInto(plan.cargo[t.vt], h.tele);
      }
      void* outs[3];
      int nout = 0;
      if (s.dst) outs[nout++] = s.dst + t.off;
      for (int i = 0; i < s.nsend; i++) outs[nout++] = s.send[i]->send.slot(s.send[i]->sendTail);
      const char* src = s.src ? s.src + t.off : nullptr;
      if (piece == 0) {
        // header only: nothing to combine or copy
      } else if (s.reduce) {
        reduceCopy(plan.op, plan.dtype, piece / plan.elemBytes, src, ins, s.nrecv, outs, nout, s.post);
      } else {
        const void* from = src ? src : ins[0];
        for (int i = 0; i < nout; i++)
          if (outs[i] != from) memcpy(outs[i], from, piece);
      }
      for (int i = 0; i < s.nsend; i++) {
        Conn* c = s.send[i];
        SlotHdr& h = c->send.hdr(c->sendTail);
        h.epoch = plan.epoch;
        h.bytes = static_cast<uint32_t>(piece);
        h.digest = plan.digest;
        if (t.cutTaken) {
          h.teleEpoch = plan.epoch;
          h.tele = plan.now[t.vt];
        } else {
          h.teleEpoch = plan.teleEpoch;
          if (plan.teleEpoch != CctPlan::kNoTele) h.tele = plan.cargo[t.vt];
        }
        c->send.ctrl->tail.store(++c->sendTail, std::memory_order_release);
        c->sendConsumer.wake();
      }
      for (int i = 0; i < s.nrecv; i++) {
        Conn* c = s.recv[i];
        c->recv.ctrl->head.store(++c->recvHead, std::memory_order_release);
        c->recvProducer.wake();
      }
      stats.lastBytes += piece * s.nsend;
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
    for (Conn* c : staged) {
      const uint64_t head = c->send.ctrl->head.load(std::memory_order_acquire);
      if (head != c->sendHeadSeen) *moved = true;
      c->sendHeadSeen = head;
      if (head != c->sendTail) {
        all = false;
        waitingOn = c;
      }
    }
    return all;
  }

  // An edge that a blocked task still needs, whose peer closed its socket (it exited or destroyed its
  // communicator): the data will never come.
  Conn* closedEdge() {
    for (Task& t : plan.tasks) {
      if (t.done()) continue;
      const Step& s = t.steps[t.cur];
      for (int i = 0; i < s.nrecv; i++)
        if (s.recv[i]->closed.load(std::memory_order_relaxed) && !recvReady(s.recv[i])) return s.recv[i];
      for (int i = 0; i < s.nsend; i++)
        if (s.send[i]->closed.load(std::memory_order_relaxed)) return s.send[i];
    }
    // (the cached head may be stale while tasks run: read the proxy's)
    for (Conn* c : staged)
      if (c->closed.load(std::memory_order_relaxed) && c->send.ctrl->head.load(std::memory_order_acquire) != c->sendTail)
        return c;
    return nullptr;
  }

  // Shared-memory peers have no socket to report their death: look for the process of every local peer
  // a blocked task waits on. Only an edge with nothing left to take counts: a peer that finished the CCT
  // and exited may still have its last slots in our FIFO, and those are good.
  bool peersAlive() {
    if (comm->shmPeer.empty()) return true;
    for (Task& t : plan.tasks) {
      if (t.done()) continue;
      const Step& s = t.steps[t.cur];
      for (int i = 0; i < s.nrecv + s.nsend; i++) {
        Conn* c = i < s.nrecv ? s.recv[i] : s.send[i - s.nrecv];
        const bool blocked = i < s.nrecv ? !recvReady(c) : !sendReady(c);
        if (!blocked || !comm->shmPeer[c->peer]) continue;
        const pid_t pid = comm->shmPeer[c->peer]->header()->pid;
        if (processAlive(pid)) continue;
        err = fmt::format("rank {}: rank {} (pid {}) on this host died (VT {}, {})", comm->rank, c->peer, pid, c->vt, c->path);
        return false;
      }
    }
    return true;
  }

  precclResult_t run() {
    const uint64_t timeoutNs = comm->cfg.timeoutMs * 1000000ull;
    uint64_t lastMoveNs = nowNs(), lastLivenessNs = lastMoveNs;
    int idle = 0;
    for (;;) {
      uint32_t seen = comm->bell->seq.load(std::memory_order_seq_cst);
      bool moved = false, all = true;
      for (Task& t : plan.tasks) {
        if (t.done()) continue;
        Adv a = advance(t);
        if (a == Adv::Error) return PRECCL_ERR(comm, precclInternalError, "{}", err);
        moved |= a == Adv::Moved;
        all &= t.done();
      }
      if (all && flushed(&moved)) return precclSuccess;
      if (moved) {
        idle = 0;
        continue;
      }
      if (comm->abortFlag.load()) return PRECCL_ERR(comm, precclRemoteError, "rank {}: communicator aborted", comm->rank);
      if (int e = comm->asyncError.load(); e != precclSuccess && e != precclInProgress)
        return PRECCL_ERR(comm, static_cast<precclResult_t>(e), "{}", comm->errorText());
      if (Conn* c = closedEdge())
        return PRECCL_ERR(comm, precclRemoteError, "rank {}: rank {} closed its connection of VT {} ({}) during a collective",
                          comm->rank, c->peer, c->vt, c->path);
      // Spin briefly (the peer is usually about to move), then yield, then sleep on the bell.
      idle++;
      if (idle < 64) continue;
      if (idle < 96) {
        sched_yield();
        continue;
      }
      bellWait(comm->bell, seen, 20000);
      uint64_t now = nowNs();
      if (now - lastLivenessNs > 100000000ull) {
        lastLivenessNs = now;
        if (!peersAlive()) return PRECCL_ERR(comm, precclRemoteError, "{}", err);
      }
      // lastMoveNs is refreshed lazily: only sleeping passes look at the clock.
      if (idle == 96) lastMoveNs = now;
      if (now - lastMoveNs > timeoutNs)
        return PRECCL_ERR(comm, precclRemoteError,
                          "rank {}: no progress for {} s in epoch {} (waiting on rank {}, VT {}, {}); PRECCL_TIMEOUT={}",
                          comm->rank, timeoutNs / 1000000000ull, plan.epoch, waitingOn ? waitingOn->peer : -1,
                          waitingOn ? waitingOn->vt : -1, waitingOn ? waitingOn->path : "no edge",
                          timeoutNs / 1000000000ull);
    }
  }
};

}  // namespace

precclResult_t execute(precclComm* comm, CctPlan& plan) {
  for (auto& s : comm->vtStats) s.lastBytes = s.lastStalls = s.lastStallNs = 0;
  plan.vtDoneNs.assign(comm->nVTs, 0);
  if (plan.teleEpoch != CctPlan::kNoTele) plan.cargo.resize(comm->nVTs);
  plan.now.assign(comm->nVTs, VtRecord{});
  Exec e(comm, plan);
  precclResult_t res = e.run();
  for (auto& s : comm->vtStats) {
    s.bytes += s.lastBytes;
    s.stalls += s.lastStalls;
    s.stallNs += s.lastStallNs;
  }
  return res;
}

}  // namespace preccl
