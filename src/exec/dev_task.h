// One task of a compiled plan (gpu/dev_plan.h) on a set of lanes: its steps in order, each a device
// primitive, with what the host executor does around them (device/executor.cc): the tasks it must wait
// for, the allocation digest, the in-band telemetry (cargo of an older epoch merged and carried, the
// telemetry cut and this CCT's own records), the VT's counters. Every task of the plan runs at once on
// its own lanes (a block of the CCT's kernel, or a CPU thread), so what a VT's tasks share is atomic.
#pragma once
#include "exec/dev_atomic.h"
#include "exec/dev_plan.h"
#include "exec/dev_prim.h"

namespace preccl::gpu {

PRECCL_HD inline void recordMax(VtRecord* into, const VtRecord& from) {
  sharedMax<uint64_t>(&into->bytes, from.bytes);
  sharedMax<uint64_t>(&into->elapsedNs, from.elapsedNs);
  sharedMax<uint64_t>(&into->stalledNs, from.stalledNs);
  sharedMax<uint32_t>(&into->stalls, from.stalls);
}

PRECCL_HD inline VtRecord recordLoad(VtRecord* r) {
  VtRecord v;
  v.bytes = sharedLoad<uint64_t>(&r->bytes);
  v.elapsedNs = sharedLoad<uint64_t>(&r->elapsedNs);
  v.stalledNs = sharedLoad<uint64_t>(&r->stalledNs);
  v.stalls = sharedLoad<uint32_t>(&r->stalls);
  return v;
}

// The slot headers of one task (the leader's): the digest checked, telemetry merged and carried.
struct TaskTele {
  const DevPlan& plan;
  DevVt& vt;
  bool cutTaken = false;
  PRECCL_HD bool heard(const SlotHdr& h) {
    if (plan.checkDigest && h.digest != plan.digest) return false;
    if (h.teleEpoch == plan.epoch) recordMax(&vt.now, h.tele);
    else if (plan.teleEpoch != ~0ull && h.teleEpoch == plan.teleEpoch) recordMax(&vt.cargo, h.tele);
    return true;
  }
  PRECCL_HD void stamp(SlotHdr& h) {
    h.digest = plan.digest;
    if (cutTaken) {
      h.teleEpoch = plan.epoch;
      h.tele = recordLoad(&vt.now);
    } else {
      h.teleEpoch = plan.teleEpoch;
      if (plan.teleEpoch != ~0ull) h.tele = recordLoad(&vt.cargo);
    }
  }
};

// This rank's record of the VT so far joins the CCT's own records (Task::cutStep).
template <class Lanes> PRECCL_HD void snapshot(Lanes& lanes, const DevPlan& plan, DevVt& vt) {
  VtRecord r;
  r.bytes = sharedLoad<uint64_t>(&vt.st.bytes);
  r.elapsedNs = lanes.nowNs() - plan.startNs;
  r.stalledNs = sharedLoad<uint64_t>(&vt.st.stallNs);
  const uint64_t stalls = sharedLoad<uint64_t>(&vt.st.stalls);
  r.stalls = static_cast<uint32_t>(stalls < UINT32_MAX ? stalls : UINT32_MAX);
  recordMax(&vt.now, r);
}

// The leader's pollUntil (gpu/dev_prim.h) under the plan's flag and budget; every lane gets the outcome.
template <class Lanes, class Ready>
PRECCL_HD int waitUntil(Lanes& lanes, const DevPlan& plan, Ready ready) {
  return lanes.share(lanes.leader() ? pollUntil(lanes, plan.abort, plan.budgetNs, ready) : 0);
}

template <class Lanes> PRECCL_HD TaskEnd runTask(Lanes& lanes, const DevPlan& plan, int ti) {
  const DevTask& t = plan.tasks[ti];
  DevVt& vt = plan.vts[t.vt];
  TaskEnd out;
  if (int e = waitUntil(lanes, plan, [&] {
        for (uint32_t i = t.afterFirst; i < t.afterLast; i++)
          if (hostVisibleLoad(&plan.progress[i]) != DevPlan::kFinished) return false;
        return true;
      })) {
    out.end = e == int(PrimEnd::TimedOut) ? TaskEnd::kWaitedAfter : e;
    return out;
  }
  TaskTele tele{plan, vt};
  // The cut (Task::atCut): before the step after cutStep, or inside cutStep at cutOff.
  auto takeCut = [&]() -> int {
    if (!t.cutShared) {
      if (!t.cutRelay && lanes.leader()) snapshot(lanes, plan, vt);
      tele.cutTaken = true;
      return 0;
    }
    // A shared cut: the last of the VT's tasks to arrive takes the one snapshot, then opens the cut.
    if (lanes.leader() && arrive(&vt.sharedCutsLeft) == 1) {
      if (vt.sharedSnapshot) snapshot(lanes, plan, vt);
      flagRaise(&vt.sharedCutOpen);
    }
    const int e = waitUntil(lanes, plan, [&] { return flagLoad(&vt.sharedCutOpen) != 0; });
    tele.cutTaken = e == 0;
    return e;
  };
  const bool hasCut = t.cutStep != DevTask::kNoCut;
  for (uint32_t k = 0; k < t.nsteps; k++) {
    out.step = int(k);
    if (lanes.leader()) hostVisibleStore(&plan.progress[ti], int(k));
    if (hasCut && !tele.cutTaken && (k > t.cutStep || (k == t.cutStep && t.cutOff == 0)))
      if ((out.end = takeCut()) != 0) return out;
    const DevStep& s = plan.steps[t.firstStep + k];
    if (s.bytes == 0 && !s.headerOnly) continue;
    DevPrim p;
    static_cast<StrideMap&>(p) = s;
    p.src = s.src;
    p.dst = s.dst;
    for (int i = 0; i < s.nrecv; i++) p.recv[i] = &plan.recvs[s.recv[i]];
    for (int i = 0; i < s.nsend; i++) p.send[i] = &plan.sends[s.send[i]];
    p.nrecv = s.nrecv;
    p.nsend = s.nsend;
    p.bytes = s.bytes;
    p.piece = t.piece;
    p.reduce = s.reduce;
    p.post = s.post;
    p.headerOnly = s.headerOnly;
    p.relayed = s.relayed;
    p.relayIsSend = s.relayIsSend;
    p.epoch = plan.epoch;
    p.attempt = plan.attempt;
    if (hasCut && !tele.cutTaken && k == t.cutStep && t.cutOff < s.bytes) {
      DevPrim head = p;
      head.bytes = t.cutOff;
      out.end = int(runPrim(lanes, head, plan.op, plan.dtype, plan.esz, plan.abort, plan.budgetNs, &vt.st, tele));
      if (out.end != 0) return out;
      if ((out.end = takeCut()) != 0) return out;
      p.from = t.cutOff;
    }
    out.end = int(runPrim(lanes, p, plan.op, plan.dtype, plan.esz, plan.abort, plan.budgetNs, &vt.st, tele));
    if (out.end != 0) return out;
  }
  if (lanes.leader()) {
    sharedMax<uint64_t>(&vt.doneNs, lanes.nowNs() - plan.startNs);
    hostVisibleStore(&plan.progress[ti], DevPlan::kFinished);
  }
  out.step = -1;
  return out;
}

}  // namespace preccl::gpu
