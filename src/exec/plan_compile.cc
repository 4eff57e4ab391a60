#include "exec/plan_compile.h"

#include <algorithm>

namespace preccl {

namespace {

template <class End>
int16_t endIndex(Conn* c, End Conn::*which, std::vector<End>* ends, std::vector<Conn*>* edges) {
  auto it = std::find(edges->begin(), edges->end(), c);
  if (it != edges->end()) return static_cast<int16_t>(it - edges->begin());
  edges->push_back(c);
  ends->push_back(c->*which);
  return static_cast<int16_t>(edges->size() - 1);
}

}  // namespace

void compilePlan(const CctPlan& plan, size_t slotBytes, uint32_t attempt, int nVTs, CompiledPlan* out) {
  CompiledPlan& c = *out;
  for (const Task& t : plan.tasks) {
    gpu::DevTask d;
    d.vt = t.vt;
    d.firstStep = static_cast<uint32_t>(c.steps.size());
    d.nsteps = static_cast<uint32_t>(t.steps.size());
    d.piece = std::max(plan.elemBytes, t.piece(slotBytes) / plan.elemBytes * plan.elemBytes);
    if (t.cutStep != Task::kNoCut) {
      d.cutStep = static_cast<uint32_t>(t.cutStep);
      d.cutOff = t.cutOff;
    }
    d.cutRelay = t.cutRelay;
    d.cutShared = t.cutShared;
    d.afterFirst = static_cast<uint32_t>(t.after.first);
    d.afterLast = static_cast<uint32_t>(t.after.second);
    for (const Step& s : t.steps) {
      gpu::DevStep x;
      static_cast<StrideMap&>(x) = s;
      for (int i = 0; i < s.nrecv; i++) x.recv[i] = endIndex(s.recv[i], &Conn::recv, &c.recvs, &c.recvEdges);
      for (int i = 0; i < s.nsend; i++) x.send[i] = endIndex(s.send[i], &Conn::send, &c.sends, &c.sendEdges);
      x.nrecv = static_cast<int16_t>(s.nrecv);
      x.nsend = static_cast<int16_t>(s.nsend);
      x.src = s.src;
      x.dst = s.dst;
      x.bytes = s.bytes;
      x.reduce = s.reduce;
      x.post = s.post;
      x.headerOnly = s.headerOnly;
      x.relayed = s.relayed;
      x.relayIsSend = s.relayIsSend;
      c.steps.push_back(x);
    }
    c.tasks.push_back(d);
  }
  c.vts.assign(nVTs, gpu::DevVt{});
  for (int v = 0; v < nVTs; v++) {
    gpu::DevVt& d = c.vts[v];
    if (plan.teleEpoch != CctPlan::kNoTele && v < static_cast<int>(plan.cargo.size())) d.cargo = plan.cargo[v];
    if (v < static_cast<int>(plan.sharedCutsLeft.size())) d.sharedCutsLeft = plan.sharedCutsLeft[v];
    if (v < static_cast<int>(plan.sharedCutSnapshot.size())) d.sharedSnapshot = plan.sharedCutSnapshot[v];
  }
  c.progress.assign(c.tasks.size(), gpu::DevPlan::kNotStarted);
  c.ends.assign(c.tasks.size(), gpu::TaskEnd{});
  gpu::DevPlan& d = c.dev;
  d.epoch = plan.epoch;
  d.attempt = attempt;
  d.digest = plan.digest;
  d.checkDigest = plan.checkDigest;
  d.dtype = plan.dtype;
  d.esz = plan.elemBytes;
  d.op = plan.op;
  d.teleEpoch = plan.teleEpoch;
  d.steps = c.steps.data();
  d.tasks = c.tasks.data();
  d.ntasks = static_cast<int>(c.tasks.size());
  d.sends = c.sends.data();
  d.recvs = c.recvs.data();
  d.vts = c.vts.data();
  d.progress = c.progress.data();
  d.ends = c.ends.data();
}

void settleCompiled(CompiledPlan& c, CctPlan& plan, std::vector<VtCounters>& stats) {
  for (size_t i = 0; i < c.sends.size(); i++) c.sendEdges[i]->send = c.sends[i];
  for (size_t i = 0; i < c.recvs.size(); i++) c.recvEdges[i]->recv = c.recvs[i];
  const int nVTs = static_cast<int>(c.vts.size());
  plan.vtDoneNs.assign(nVTs, 0);
  plan.now.assign(nVTs, VtRecord{});
  if (plan.teleEpoch != CctPlan::kNoTele) plan.cargo.resize(nVTs);
  for (int v = 0; v < nVTs && v < static_cast<int>(stats.size()); v++) {
    const gpu::DevVt& d = c.vts[v];
    stats[v].lastBytes = d.st.bytes;
    stats[v].lastStalls = d.st.stalls;
    stats[v].lastStallNs = d.st.stallNs;
    stats[v].lastRelayed = d.st.relayed;
    plan.vtDoneNs[v] = d.doneNs;
    plan.now[v] = d.now;
    if (plan.teleEpoch != CctPlan::kNoTele) plan.cargo[v] = d.cargo;
  }
}

const Conn* CompiledPlan::edgeOf(int task, int step) const {
  if (task < 0 || task >= static_cast<int>(tasks.size()) || step < 0 || step >= static_cast<int>(tasks[task].nsteps))
    return nullptr;
  const gpu::DevStep& s = steps[tasks[task].firstStep + step];
  if (s.nrecv > 0) return recvEdges[s.recv[0]];
  if (s.nsend > 0) return sendEdges[s.send[0]];
  return nullptr;
}

}  // namespace preccl
