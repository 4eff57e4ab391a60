// Plan of one CCT: the policy's allocation turned into Tasks of Steps for the executor. The builders are
// per algorithm family (plan_ring.cc, plan_tree.cc, plan_p2p.cc); this is the only place that knows
// which rank sends what to whom.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "plan/plan.h"
#include "policy/allocation.h"
#include "policy/policy.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {

enum class Coll { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, Gather, Scatter, P2P };
const char* collName(Coll c);

struct P2POp {
  bool isSend = false;
  int peer = -1;
  void* buf = nullptr;
  size_t count = 0;
};

struct CctArgs {
  Coll coll = Coll::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // AllGather: sendcount; ReduceScatter: recvcount; AlltoAll/Gather/Scatter: per rank
  precclDataType_t dtype = precclFloat;
  RedOp op;
  int root = 0;
  std::vector<P2POp> p2p;  // Coll::P2P only: the group's sends and receives, in call order
};

// Chunk i of n of a range of `count` elements, balanced (sizes differ by at most one).
inline size_t chunkOffset(size_t count, int n, int i) {
  size_t base = count / n, rem = count % n;
  return base * i + std::min<size_t>(i, rem);
}
inline size_t chunkCount(size_t count, int n, int i) { return count / n + (static_cast<size_t>(i) < count % n ? 1 : 0); }

Conn* connTo(precclComm* comm, int peer, int vt);
// The edge that carries `from`'s bytes for `to` on VT vt, seen from this rank (one of the two ends):
// direct, or under rail affinity (Topology::rail) `from`'s relay on that VT when `to` is on another host
// (a relay edge naming the far end: docs/architecture.md, "Rank-NIC affinity and the relay").
Conn* railEdge(precclComm* comm, int from, int to, int vt);

// The pipeline's piece: the bytes a Step moves per slot. A slot is forwarded only once it is received
// whole, so every call starts and ends with a few piece-times in which not every link is busy. The piece
// is the FIFO's slot, unless the policy capped it by the VT's modelled rate (`capBytes`,
// VtRange::pieceCapBytes, 0 = none): on a slow link a full slot takes long. No rule on the VT's bytes:
// on CPU-bound paths smaller pieces cost more per byte, so pieces that shrank with a VT's share made it
// look slower and lose more bytes (measured in docs/results-archive.md, "Where the rest goes").
inline size_t pieceBytes(size_t slotBytes, size_t esz, size_t capBytes) {
  const size_t want = capBytes != 0 ? std::min(capBytes, slotBytes) : slotBytes;
  return std::max(esz, want / esz * esz);
}

// Deterministic reductions: an element's reduction order depends only on its index, the call's count and
// the ranks, never on which VT carries it, so a float result has the same bits whatever the allocation,
// the mask or a retry (docs/architecture.md, "Reduction order").
//
// Ring AllReduce: the call's elements are cut into blocks of ringBlockElems, and block k belongs to
// chunk k mod n, whichever VT carries it; chunk c's sum starts at ring position c. A VT's chunk c is the
// part of its range in chunk c's blocks, a strided run of memory (Step::blockBytes) holding nearly 1/n of
// the range whatever the range, so the VT's rounds (one piece of every chunk, as in NCCL's ring loop)
// keep every rank of its ring at work, and a step is still one piece.
constexpr size_t kRingBlockBytes = 8192;
inline size_t ringBlockElems(size_t esz) { return std::max<size_t>(1, kRingBlockBytes / esz); }
// How many of the elements below x are in chunk c (blocks of b elements, n chunks).
inline size_t ringChunkBelow(size_t x, int n, int c, size_t b) {
  const size_t nb = b * n, r = x % nb, lo = b * c;
  return x / nb * b + (r > lo ? std::min(r - lo, b) : 0);
}
// The index of chunk c's k-th element.
inline size_t ringChunkElem(size_t k, int n, int c, size_t b) { return k / b * b * n + b * c + k % b; }
// Whether every chunk has a part in [offset, offset + count): then every round up to the shortest part's
// last one sends on every hop (the telemetry cut and the cargo rely on it).
inline bool ringEveryChunk(size_t offset, size_t count, int n, size_t b) {
  for (int c = 0; c < n; c++)
    if (ringChunkBelow(offset + count, n, c, b) == ringChunkBelow(offset, n, c, b)) return false;
  return true;
}

// Trees (AllReduce and Reduce): the elements below treeSplit(count) follow the first tree, the rest its
// mirror, whichever VT carries them; a VT whose range straddles the split runs a task on each tree.
inline size_t treeSplit(size_t count) { return count / 2; }

// The telemetry cut before the last data piece of t's first step (Task::cutStep): what comes after it
// carries the CCT's own records on. The offset of that piece, 0 when the step is a single piece (no room
// before it: then no cut, and the CCT none, since cuts are all or nothing).
inline size_t lastPieceOffset(const Task& t, size_t slotBytes, size_t esz) {
  const size_t data = t.steps.front().bytes, piece = t.piece(slotBytes) / esz * esz;
  return data > piece ? (data - 1) / piece * piece : 0;
}
inline void cutBeforeLastPiece(Task* t, size_t slotBytes, size_t esz, bool relay = false) {
  const size_t off = lastPieceOffset(*t, slotBytes, esz);
  if (off == 0) return;
  t->cutStep = 0;
  t->cutOff = off;
  t->cutRelay = relay;
}

// Broadcast and Reduce move data one way (a ring's chain, or down or up a tree), so records travelling
// with the data reach only the ranks downstream of everyone: a chain's last rank, a tree Reduce's root,
// nobody at all in a tree Broadcast. When such a CCT is large enough that a few hops of header-only slots
// are noise, each VT appends a telemetry tail after its data (docs/telemetry.md): around the ring from
// the chain's last rank (n-1 hops), or down the tree from the root (preceded, for a Broadcast, by one pass
// up to it). It carries the CCT's own records (the cut) or older cargo. Every rank evaluates this from
// values all ranks share, so all agree whether the tail runs.
constexpr size_t kTeleTailMinBytes = 1 << 20;
inline bool teleTailRuns(const CctArgs& a, size_t bytes, int nranks) {
  return nranks > 1 && bytes >= kTeleTailMinBytes && (a.coll == Coll::Broadcast || a.coll == Coll::Reduce);
}

bool useTree(precclComm* comm, const CctArgs& a);
void planRingAllReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planRingReduceScatter(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planRingAllGather(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planRingBroadcast(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planRingReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planTreeAllReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planTreeBroadcast(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planTreeReduce(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
// `sendbuff` of AlltoAll may be a staging copy (in-place calls).
void planAlltoAll(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planGather(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
void planScatter(precclComm* comm, const CctArgs& a, const Allocation& al, CctPlan* plan);
// Returns false (with *why) when a group's self-sends and self-receives do not pair up.
bool planP2P(precclComm* comm, const CctArgs& a, CctPlan* plan, std::string* why);

}  // namespace preccl
