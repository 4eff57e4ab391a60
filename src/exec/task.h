// The one task semantics: what a rank does to run one Task of a plan (plan/plan.h), for the host's runner
// (one thread, every task in turn), the lanes runner (a CPU thread per task) and the CCT's kernel (a CUDA
// block per task) alike. advance() moves a task as far as its FIFOs allow and returns; a runner calls it
// again when something may have changed, so the same code is a resumable state machine on the host and a
// spin loop on a GPU. Around each piece of a step (a slot), in order:
//   wait for the tasks before it (Task::after) -> the telemetry cut (a snapshot, or a shared cut's
//   meeting) -> the slots of the step's inputs (stale ones dropped, an abort noticed) -> room in its
//   outputs (a stall counted, in the wait itself) -> the headers checked (epoch, attempt, size, digest)
//   and their telemetry merged -> the bytes moved (all lanes) -> headers stamped with the cargo or this
//   CCT's records, slots published and released, the VT's counters added.
// Lanes: leader(), id(), count(), sync(), share(v) (the leader's v for every lane), nowNs(), relax(), and
// the data movers reduceCopy(...) and copy(...) (exec/host_lanes.h, gpu/block_lanes.cuh). The leader
// alone waits, counts and publishes; every lane moves bytes.
#pragma once
#include "exec/run.h"
#include "exec/shared_atomic.h"
#include "exec/slot_rules.h"

namespace preccl {

// How a call of advance() ended.
enum class Adv : int {
  Moved = 0,    // progress, then blocked (or a step's worth done)
  Blocked = 1,  // nothing could move: a FIFO to wait on (TaskRun::waitEdge), or tasks before it
  Done = 2,     // the task finished
  Abort = 3,    // an abort notice at the head of an input that ends this attempt (exec/slot_rules.h)
  BadSlot = 4,  // a slot that is not this attempt's data of the expected size and allocation
  Answer = 5,   // a commit notice at an input's head that the host must answer before it goes
};
constexpr int kGo = -1;  // advance()'s internal verdict: move the piece

namespace task {

// This rank's record of the VT so far joins the CCT's own records (Task::cutStep).
template <class Lanes> PRECCL_HD void snapshot(Lanes& lanes, const Run& r, VtRun& vt) {
  VtRecord rec;
  rec.bytes = sharedLoad<uint64_t>(&vt.bytes);
  rec.elapsedNs = lanes.nowNs() - r.startNs;
  rec.stalledNs = sharedLoad<uint64_t>(&vt.stallNs);
  const uint64_t stalls = sharedLoad<uint64_t>(&vt.stalls);
  rec.stalls = static_cast<uint32_t>(stalls < UINT32_MAX ? stalls : UINT32_MAX);
  recordMax(&vt.now, rec);
}

PRECCL_HD inline bool atCut(const Task& t, const TaskRun& me) {
  return t.cutStep != Task::kNoCut && (uint32_t(me.cur) > t.cutStep || (uint32_t(me.cur) == t.cutStep && me.off >= t.cutOff));
}

// The leader's part before a piece: returns kGo when the piece can move (TaskRun::piece set), else the
// Adv to return. `progressed`: something moved in this call.
template <class Lanes> PRECCL_HD int prepare(Lanes& lanes, const Run& r, int ti, bool& progressed) {
  const Task& t = r.tasks[ti];
  TaskRun& me = r.task[ti];
  VtRun& vt = r.vt[t.vt];
  // Nothing can move now: a wait for something else (Moved if something did first).
  auto waits = [&] { return progressed ? int(Adv::Moved) : int(Adv::Blocked); };
  if (me.cur == TaskRun::kFinished) return int(Adv::Done);
  if (me.cur == TaskRun::kNotStarted) {
    for (uint32_t i = t.afterFirst; i < t.afterLast; i++)
      if (hostVisibleLoad(&r.task[i].cur) != TaskRun::kFinished) return waits();
    hostVisibleStore(&me.cur, 0);
  }
  for (;;) {
    if (uint32_t(me.cur) >= t.nsteps) {
      sharedMax<uint64_t>(&vt.doneNs, lanes.nowNs() - r.startNs);
      hostVisibleStore(&me.cur, TaskRun::kFinished);
      return int(Adv::Done);
    }
    if (!me.cutTaken && atCut(t, me)) {
      if (!t.cutShared) {
        if (!t.cutRelay) snapshot(lanes, r, vt);
      } else {
        // A shared cut: the last of the VT's tasks to arrive takes the one snapshot, then opens the cut.
        if (!me.cutArrived) {
          me.cutArrived = 1;
          progressed = true;
          if (arrive(&vt.sharedCutsLeft) == 1) {
            if (vt.sharedSnapshot) snapshot(lanes, r, vt);
            flagRaise(&vt.sharedCutOpen);
          }
        }
        if (!flagLoad(&vt.sharedCutOpen)) return waits();
      }
      me.cutTaken = 1;
    }
    const Step& s = r.steps[t.firstStep + uint32_t(me.cur)];
    if (s.bytes == 0 && !s.headerOnly) {
      hostVisibleStore(&me.cur, me.cur + 1);
      me.off = 0;
      continue;
    }
    const uint64_t piece = s.headerOnly ? 0 : (s.bytes - me.off < t.piece ? s.bytes - me.off : t.piece);
    for (int i = 0; i < s.nrecv; i++) {
      FifoConsumer& in = *r.recv[s.recv[i]];
      for (;;) {
        if (!in.ready()) {
          me.waitEdge = s.recv[i];
          return waits();
        }
        // A pending attempt's abort is older than this one, but not stale: it ends this attempt.
        if (r.agree && pendingAbort(in.hdr(), r.defer)) {
          me.waitEdge = s.recv[i];
          return int(Adv::Abort);
        }
        if (!droppableSlot(in.hdr(), r.epoch, r.attempt, r.dropStale)) break;
        if (commitNeedsAnswer(in.hdr(), in.slot(), r.last)) {
          me.waitEdge = s.recv[i];
          return int(Adv::Answer);
        }
        in.release();
        progressed = true;
      }
      if (r.agree && (abortNotice(in.hdr(), r.epoch, r.attempt) ||
                      (r.defer.deferred && in.hdr().kind == kSlotAbort && nextEpochAlarm(in.hdr(), r.epoch, r.attempt, 0)))) {
        me.waitEdge = s.recv[i];
        return int(Adv::Abort);
      }
    }
    for (int i = 0; i < s.nsend; i++)
      if (!r.send[s.send[i]]->hasRoom()) {
        // The in-band congestion signal: downstream has not freed a slot. Counted once per slot waited for.
        if (!me.stalled) {
          me.stalled = 1;
          me.stallFromNs = lanes.nowNs();
          sharedAdd<uint64_t>(&vt.stalls, 1);
        }
        me.waitEdge = s.send[i];
        return waits();
      }
    if (me.stalled) {
      sharedAdd<uint64_t>(&vt.stallNs, lanes.nowNs() - me.stallFromNs);
      me.stalled = 0;
    }
    for (int i = 0; i < s.nrecv; i++) {
      const SlotHdr& h = r.recv[s.recv[i]]->hdr();
      if (h.epoch != r.epoch || h.attempt != r.attempt || h.kind != kSlotData || h.bytes != piece ||
          (r.checkDigest && h.digest != r.digest)) {
        me.waitEdge = s.recv[i];
        return int(Adv::BadSlot);
      }
      if (h.teleEpoch == r.epoch) recordMax(&vt.now, h.tele);
      else if (r.teleEpoch != kNoTeleEpoch && h.teleEpoch == r.teleEpoch) recordMax(&vt.cargo, h.tele);
    }
    me.piece = piece;
    return kGo;
  }
}

// Every lane: the piece's bytes, in runs that are contiguous in the caller's memory (one, unless the step
// is strided); in each, the sources in reduceCopy's order (the local input, then the received ones).
template <class Lanes> PRECCL_HD void move(Lanes& lanes, const Run& r, const Step& s, uint64_t off, uint64_t piece) {
  for (size_t done = 0; done < piece;) {
    const size_t left = piece - done, contiguous = s.runFrom(off + done);
    const size_t run = contiguous < left ? contiguous : left, mem = s.memOffset(off + done);
    const void* in[3];
    for (int i = 0; i < s.nrecv; i++) in[i] = r.recv[s.recv[i]]->slot() + done;
    void* outs[3];
    int nout = 0;
    if (s.dst) outs[nout++] = s.dst + mem;
    for (int i = 0; i < s.nsend; i++) outs[nout++] = r.send[s.send[i]]->slot() + done;
    const char* src = s.src ? s.src + mem : nullptr;
    if (s.reduce && (s.srcPlain || s.srcLast)) {
      // src is a partial result: no pre-multiply, and first or last as the step says.
      RedOp op = r.op;
      op.preMul = false;
      int nin = s.nrecv;
      if (s.srcLast) in[nin++] = src;
      lanes.reduceCopy(op, r.dtype, r.esz, run / r.esz, s.srcLast ? nullptr : src, in, nin, outs, nout, s.post);
    } else if (s.reduce) {
      lanes.reduceCopy(r.op, r.dtype, r.esz, run / r.esz, src, in, s.nrecv, outs, nout, s.post);
    } else {
      lanes.copy(src ? src : in[0], outs, nout, run);
    }
    done += run;
  }
}

// The leader's part after a piece: the slots stamped, published and released, the counters added.
PRECCL_HD inline void finish(const Run& r, const Task& t, const Step& s, TaskRun& me, VtRun& vt) {
  const uint64_t piece = me.piece;
  for (int i = 0; i < s.nsend; i++) {
    SlotHdr& h = r.send[s.send[i]]->hdr();
    h.epoch = r.epoch;
    h.attempt = r.attempt;
    h.kind = kSlotData;
    h.pad = 0;
    h.bytes = static_cast<uint32_t>(piece);
    h.digest = r.digest;
    if (s.relayed) {  // a relay passes on the telemetry its slot came with
      const SlotHdr& from = r.recv[s.recv[0]]->hdr();
      h.teleEpoch = from.teleEpoch;
      h.tele = from.tele;
    } else if (me.cutTaken) {
      h.teleEpoch = r.epoch;
      h.tele = recordLoad(&vt.now);
    } else {
      h.teleEpoch = r.teleEpoch;
      if (r.teleEpoch != kNoTeleEpoch) h.tele = recordLoad(&vt.cargo);
    }
    r.send[s.send[i]]->publish();
  }
  for (int i = 0; i < s.nrecv; i++) r.recv[s.recv[i]]->release();
  if (!s.relayed || s.relayIsSend) sharedAdd<uint64_t>(&vt.bytes, piece * s.nsend);
  if (s.relayed) sharedAdd<uint64_t>(&vt.relayed, piece);
  me.off += piece;
  if (me.off == s.bytes) {
    me.off = 0;
    hostVisibleStore(&me.cur, me.cur + 1);
  }
}

}  // namespace task

// Moves task `ti` as far as its FIFOs allow.
template <class Lanes> PRECCL_HD Adv advance(Lanes& lanes, const Run& r, int ti) {
  const Task& t = r.tasks[ti];
  TaskRun& me = r.task[ti];
  bool progressed = false;  // the leader's
  for (;;) {
    const int verdict = lanes.share(lanes.leader() ? task::prepare(lanes, r, ti, progressed) : 0);
    if (verdict != kGo) return Adv(verdict);
    const Step& s = r.steps[t.firstStep + uint32_t(me.cur)];
    task::move(lanes, r, s, me.off, me.piece);
    lanes.sync();
    if (lanes.leader()) {
      task::finish(r, t, s, me, r.vt[t.vt]);
      progressed = true;
    }
  }
}

}  // namespace preccl
