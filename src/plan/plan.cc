#include "plan/plan.h"

namespace preccl {

const char* algoName(PlanAlgo a) {
  switch (a) {
    case PlanAlgo::Ring: return "ring";
    case PlanAlgo::Tree: return "tree";
    case PlanAlgo::Doubling: return "doubling";
  }
  return "?";
}

const char* primName(Prim p) {
  switch (p) {
    case Prim::Copy: return "copy";
    case Prim::ReduceCopy: return "reduceCopy";
    case Prim::Send: return "send";
    case Prim::ReduceSend: return "reduceSend";
    case Prim::CopySend: return "copySend";
    case Prim::Recv: return "recv";
    case Prim::RecvSend: return "recvSend";
    case Prim::RecvCopySend: return "recvCopySend";
    case Prim::RecvReduceSend: return "recvReduceSend";
    case Prim::RecvReduceCopy: return "recvReduceCopy";
    case Prim::RecvReduceCopySend: return "recvReduceCopySend";
    case Prim::Header: return "header";
  }
  return "?";
}

Prim primOf(const Step& s) {
  if (s.headerOnly) return Prim::Header;
  const bool in = s.nrecv > 0, out = s.nsend > 0, dst = s.dst != nullptr;
  if (!in) {
    if (s.reduce) return out ? Prim::ReduceSend : Prim::ReduceCopy;
    return out ? (dst ? Prim::CopySend : Prim::Send) : Prim::Copy;
  }
  if (s.reduce) return out ? (dst ? Prim::RecvReduceCopySend : Prim::RecvReduceSend) : Prim::RecvReduceCopy;
  return out ? (dst ? Prim::RecvCopySend : Prim::RecvSend) : Prim::Recv;
}

void Plan::clear() {
  coll = Coll::AllReduce;
  algo = PlanAlgo::Ring;
  dtype = precclFloat;
  esz = 4;
  op = RedOp{};
  digest = 0;
  checkDigest = false;
  edges.clear();
  steps.clear();
  tasks.clear();
  cuts = false;
  sharedCuts.clear();
  sharedCutSnapshot.clear();
  senders.clear();
  cutsRule = -1;
  edgeIndex_.clear();
}

namespace {
// Peers and relay far ends are ranks (< 2^24), VTs < 2^16: one key each.
uint64_t edgeKey(const EdgeName& e) {
  return uint64_t(uint32_t(e.peer) & 0xffffffu) << 40 | uint64_t(uint32_t(e.far + 1) & 0xffffffu) << 16 |
         uint64_t(uint32_t(e.vt) & 0xffffu);
}
}  // namespace

int32_t Plan::edge(const EdgeName& e) {
  if (edges.size() < kScanEdges) {
    for (size_t i = 0; i < edges.size(); i++)
      if (edges[i] == e) return int32_t(i);
    edges.push_back(e);
    if (edges.size() == kScanEdges)
      for (size_t i = 0; i < edges.size(); i++) edgeIndex_.emplace(edgeKey(edges[i]), int32_t(i));
    return int32_t(edges.size() - 1);
  }
  auto [it, added] = edgeIndex_.try_emplace(edgeKey(e), int32_t(edges.size()));
  if (added) edges.push_back(e);
  return it->second;
}

Task& Plan::begin(int vt, size_t piece) {
  Task t;
  t.vt = vt;
  t.firstStep = uint32_t(steps.size());
  t.piece = piece;
  tasks.push_back(t);
  return tasks.back();
}

void Plan::add(const Step& s) {
  steps.push_back(s);
  tasks.back().nsteps++;
}

}  // namespace preccl
