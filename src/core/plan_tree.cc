// Tree algorithms over two trees: the tree rooted at the first ring position (or at the root) and its
// mirror, so that a node's up/down load is spread as in NCCL's double binary tree. A reduction picks the
// tree by element (plan.h treeSplit: the first half of the call on one, the second on the other), so an
// element's order of reduction does not depend on its VT; since VTs take consecutive ranges, in VT order,
// and VT v uses NIC v mod K, every NIC still carries both trees. Broadcast reduces nothing and picks by VT
// (Topology::mirrorTree). The upward reduce and the downward broadcast of a node are separate tasks that
// run concurrently (NCCL splits its warps the same way): a node still sending up must be able to receive
// the first results coming down.
#include "core/comm.h"
#include "core/plan.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

struct TreeStep {
  Step s;
  void recvFrom(Conn* c) { s.recv[s.nrecv++] = c; }
  void sendTo(Conn* c) { s.send[s.nsend++] = c; }
};

// The parts of a VT's range on each tree: [offset, offset + count) of the call's elements, on the mirror or not.
struct TreePart {
  size_t offset, count;
  bool mirror;
};
std::vector<TreePart> treeParts(const VtRange& r, size_t count) {
  const size_t split = treeSplit(count), end = r.offset + r.count;
  if (r.count == 0 || end <= split) return {{r.offset, r.count, false}};
  if (r.offset >= split) return {{r.offset, r.count, true}};
  return {{r.offset, split - r.offset, false}, {split, end - split, true}};
}

// A VT's second part starts on this rank once its first part's tasks are done: the two trees share the
// VT's edges (a node's parent in one tree may be its child in the other), and a FIFO carries one task's
// slots at a time. The first part alone is the one-tree algorithm, so it completes; the second finds every
// edge it shares with the first drained of the first's slots, in order.
// Tasks [from, end) of the plan wait for tasks [first, from).
void afterPart(CctPlan* plan, size_t first, size_t from) {
  for (size_t i = from; i < plan->tasks.size(); i++) plan->tasks[i].after = {first, from};
}

// A task of one data step (plus, later, telemetry steps), its range moved in pieces (plan.h).
Task oneStep(precclComm* comm, const VtRange& range, int vt, const Step& s, size_t esz) {
  Task t;
  t.vt = vt;
  t.steps.push_back(s);
  t.pieceBytes = pieceBytes(comm->slotBytes, esz, range.pieceCapBytes);
  return t;
}

// up: children -> (reduce with src) -> parent, or at the root -> dst (+ children when `rootSendsDown`).
Step upStep(precclComm* comm, const TreeLinks& tl, int vt, const char* src, char* dst, size_t bytes, bool rootSendsDown) {
  TreeStep t;
  for (int c = 0; c < 2; c++)
    if (tl.child[c] >= 0) t.recvFrom(connTo(comm, tl.child[c], vt));
  if (tl.parent >= 0) {
    t.sendTo(connTo(comm, tl.parent, vt));
  } else {
    t.s.dst = dst;
    t.s.post = true;
    if (rootSendsDown)
      for (int c = 0; c < 2; c++)
        if (tl.child[c] >= 0) t.sendTo(connTo(comm, tl.child[c], vt));
  }
  t.s.src = src;
  t.s.bytes = bytes;
  t.s.reduce = true;
  return t.s;
}

// down: parent -> dst and children (or, at the root, src -> dst and children).
Step downStep(precclComm* comm, const TreeLinks& tl, int vt, const char* src, char* dst, size_t bytes) {
  TreeStep t;
  if (tl.parent >= 0) t.recvFrom(connTo(comm, tl.parent, vt));
  else t.s.src = src;
  for (int c = 0; c < 2; c++)
    if (tl.child[c] >= 0) t.sendTo(connTo(comm, tl.child[c], vt));
  t.s.dst = dst;
  t.s.bytes = bytes;
  return t.s;
}

// Header-only telemetry steps along the tree (plan.h teleTailRuns): `up` takes the children's maxima to the
// parent, `down` the parent's to the children. A step with no peer at all cannot occur: n > 1.
Step headerStep(precclComm* comm, const TreeLinks& tl, int vt, bool up) {
  TreeStep t;
  for (int c = 0; c < 2; c++)
    if (tl.child[c] >= 0) up ? t.recvFrom(connTo(comm, tl.child[c], vt)) : t.sendTo(connTo(comm, tl.child[c], vt));
  if (tl.parent >= 0) up ? t.sendTo(connTo(comm, tl.parent, vt)) : t.recvFrom(connTo(comm, tl.parent, vt));
  t.s.headerOnly = true;
  return t.s;
}

}  // namespace

void planTreeAllReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t first = plan->tasks.size();
    for (const TreePart& part : treeParts(al.vt[v], a.count)) {
      const size_t from = plan->tasks.size();
      TreeLinks tl = allReduceTree(comm->topo, comm->rank, part.mirror);
      const size_t o = part.offset * esz, b = part.count * esz;
      const char* src = static_cast<const char*>(a.sendbuff) + o;
      char* dst = static_cast<char*>(a.recvbuff) + o;
      Task up = oneStep(comm, al.vt[v], v, upStep(comm, tl, v, src, dst, b, true), esz);
      cutBeforeLastPiece(&up, comm->slotBytes, esz);  // the last pieces up reach the root
      plan->tasks.push_back(std::move(up));
      if (tl.parent < 0) {
        if (from != first) afterPart(plan, first, from);
        continue;
      }
      Task down = oneStep(comm, al.vt[v], v, downStep(comm, tl, v, nullptr, dst, b), esz);
      cutBeforeLastPiece(&down, comm->slotBytes, esz, true);  // and down from it
      plan->tasks.push_back(std::move(down));
      if (from != first) afterPart(plan, first, from);
    }
  }
}

void planTreeBroadcast(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const bool tail = teleTailRuns(a, a.count * esz, comm->nranks);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    TreeLinks tl = vtTree(comm->topo, comm->rank, v, a.root);
    const size_t o = al.vt[v].offset * esz, b = al.vt[v].count * esz;
    Task t = oneStep(comm, al.vt[v], v, downStep(comm, tl, v, static_cast<const char*>(a.sendbuff) + o, static_cast<char*>(a.recvbuff) + o, b),
                     esz);
    // The data came down from the root, which heard nobody: the tail goes up to it, then down to all.
    // The cut at the tail: every rank's snapshot (its whole record) goes up with it.
    if (tail) {
      if (b > 0) t.cutStep = 1;
      t.steps.push_back(headerStep(comm, tl, v, true));
      t.steps.push_back(headerStep(comm, tl, v, false));
    }
    plan->tasks.push_back(std::move(t));
  }
}

void planTreeReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const bool tail = teleTailRuns(a, a.count * esz, comm->nranks);
  for (int v = 0; v < static_cast<int>(al.vt.size()); v++) {
    const size_t first = plan->tasks.size();
    for (const TreePart& part : treeParts(al.vt[v], a.count)) {
      const size_t from = plan->tasks.size();
      TreeLinks tl = treeLinks(comm->topo, comm->rank, a.root, part.mirror);
      const size_t o = part.offset * esz, b = part.count * esz;
      char* dst = tl.parent < 0 ? static_cast<char*>(a.recvbuff) + o : nullptr;
      Task t = oneStep(comm, al.vt[v], v, upStep(comm, tl, v, static_cast<const char*>(a.sendbuff) + o, dst, b, false), esz);
      if (tail) {
        cutBeforeLastPiece(&t, comm->slotBytes, esz);
        t.steps.push_back(headerStep(comm, tl, v, false));  // the root heard everyone: down to all
      }
      plan->tasks.push_back(std::move(t));
      if (from != first) afterPart(plan, first, from);
    }
  }
}

}  // namespace preccl
