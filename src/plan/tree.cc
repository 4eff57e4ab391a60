// Tree algorithms over two trees: the tree rooted at the first ring position (or at the root) and its
// mirror, so that a node's up/down load is spread as in NCCL's double binary tree. A reduction picks the
// tree by element (layout.h treeSplit: the first half of the call on one, the second on the other), so an
// element's order of reduction does not depend on its VT; since VTs take consecutive ranges, in VT order,
// and VT v uses NIC v mod K, every NIC still carries both trees. Broadcast reduces nothing and picks by VT
// (Topology::mirrorTree). The upward reduce and the downward broadcast of a node are separate tasks that
// run concurrently (NCCL splits its warps the same way): a node still sending up must be able to receive
// the first results coming down.
#include "plan/layout.h"
#include "plan/planners.h"
#include "plan/steps.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

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
void afterPart(Plan* plan, size_t first, size_t from) {
  for (size_t i = from; i < plan->tasks.size(); i++) {
    plan->tasks[i].afterFirst = uint32_t(first);
    plan->tasks[i].afterLast = uint32_t(from);
  }
}

// A node's edges on VT vt of one tree (-1 where it has none).
struct TreeEdges {
  int32_t parent = -1, child[2] = {-1, -1};
  TreeEdges(Plan* plan, const TreeLinks& tl, int vt) {
    if (tl.parent >= 0) parent = plan->edge({tl.parent, vt, -1});
    for (int c = 0; c < 2; c++)
      if (tl.child[c] >= 0) child[c] = plan->edge({tl.child[c], vt, -1});
  }
  bool root() const { return parent < 0; }
};

// up: the children's sums reduced with this rank's input, to the parent; at the root to dst (and down to
// the children again when `rootSendsDown`).
Step upStep(const TreeEdges& e, const char* src, char* dst, size_t bytes, bool rootSendsDown) {
  if (!e.root()) return steps::recvReduceSend({e.child[0], e.child[1]}, src, e.parent, bytes);
  if (rootSendsDown) return steps::recvReduceCopySend({e.child[0], e.child[1]}, src, dst, {e.child[0], e.child[1]}, bytes);
  return steps::recvReduceCopy({e.child[0], e.child[1]}, src, dst, bytes);
}

// down: from the parent to dst and the children (at the root, from src).
Step downStep(const TreeEdges& e, const char* src, char* dst, size_t bytes) {
  if (e.root()) return steps::copySend(src, dst, {e.child[0], e.child[1]}, bytes);
  return steps::recvCopySend(e.parent, dst, {e.child[0], e.child[1]}, bytes);
}

// Header-only telemetry steps along the tree (layout.h teleTailRuns): `up` takes the children's maxima to
// the parent, `down` the parent's to the children. A step with no peer at all cannot occur: n > 1.
Step headerStep(const TreeEdges& e, bool up) {
  if (up) return steps::header({e.child[0], e.child[1]}, {e.parent});
  return steps::header({e.parent}, {e.child[0], e.child[1]});
}

}  // namespace

void planTreeAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const Allocation& al = d.al;
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    const size_t first = plan->tasks.size(), piece = pieceBytes(v.slotBytes, esz, al.vt[vt].pieceCapBytes);
    for (const TreePart& part : treeParts(al.vt[vt], a.count)) {
      const size_t from = plan->tasks.size();
      const TreeEdges e(plan, allReduceTree(*v.topo, v.rank, part.mirror), vt);
      const size_t o = part.offset * esz, b = part.count * esz;
      const char* src = static_cast<const char*>(a.sendbuff) + o;
      char* dst = static_cast<char*>(a.recvbuff) + o;
      plan->begin(vt, piece);
      plan->add(upStep(e, src, dst, b, true));
      cutBeforeLastPiece(*plan, &plan->last());  // the last pieces up reach the root
      if (!e.root()) {
        plan->begin(vt, piece);
        plan->add(downStep(e, nullptr, dst, b));
        cutBeforeLastPiece(*plan, &plan->last(), true);  // and down from it
      }
      if (from != first) afterPart(plan, first, from);
    }
  }
}

void planTreeBroadcast(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const bool tail = teleTailRuns(a, v.nranks);
  const Allocation& al = d.al;
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    const TreeEdges e(plan, vtTree(*v.topo, v.rank, vt, a.root), vt);
    const size_t o = al.vt[vt].offset * esz, b = al.vt[vt].count * esz;
    plan->begin(vt, pieceBytes(v.slotBytes, esz, al.vt[vt].pieceCapBytes));
    plan->add(downStep(e, static_cast<const char*>(a.sendbuff) + o, static_cast<char*>(a.recvbuff) + o, b));
    // The data came down from the root, which heard nobody: the tail goes up to it, then down to all.
    // The cut at the tail: every rank's snapshot (its whole record) goes up with it.
    if (tail) {
      if (b > 0) plan->last().cutStep = 1;
      plan->add(headerStep(e, true));
      plan->add(headerStep(e, false));
    }
  }
}

void planTreeReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const size_t esz = dtypeSize(a.dtype);
  const bool tail = teleTailRuns(a, v.nranks);
  const Allocation& al = d.al;
  for (int vt = 0; vt < static_cast<int>(al.vt.size()); vt++) {
    const size_t first = plan->tasks.size(), piece = pieceBytes(v.slotBytes, esz, al.vt[vt].pieceCapBytes);
    for (const TreePart& part : treeParts(al.vt[vt], a.count)) {
      const size_t from = plan->tasks.size();
      const TreeEdges e(plan, treeLinks(*v.topo, v.rank, a.root, part.mirror), vt);
      const size_t o = part.offset * esz, b = part.count * esz;
      char* dst = e.root() ? static_cast<char*>(a.recvbuff) + o : nullptr;
      plan->begin(vt, piece);
      plan->add(upStep(e, static_cast<const char*>(a.sendbuff) + o, dst, b, false));
      if (tail) {
        cutBeforeLastPiece(*plan, &plan->last());
        plan->add(headerStep(e, false));  // the root heard everyone: down to all
      }
      if (from != first) afterPart(plan, first, from);
    }
  }
}

}  // namespace preccl
