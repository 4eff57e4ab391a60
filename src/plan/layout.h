// Where a CCT's bytes go, for every planner: the pipeline's piece, the deterministic reduction layout
// (an element's order of reduction depends only on its index), and where the telemetry cut falls.
#pragma once
#include <algorithm>
#include <cstddef>

#include "plan/call.h"
#include "plan/plan.h"
#include "reduce/dtype.h"

namespace preccl {

// Chunk i of n of a range of `count` elements, balanced (sizes differ by at most one).
inline size_t chunkOffset(size_t count, int n, int i) {
  size_t base = count / n, rem = count % n;
  return base * i + std::min<size_t>(i, rem);
}
inline size_t chunkCount(size_t count, int n, int i) { return count / n + (static_cast<size_t>(i) < count % n ? 1 : 0); }

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
inline size_t lastPieceOffset(const Plan& plan, const Task& t) {
  const size_t data = plan.step(t, 0).bytes;
  return data > t.piece ? (data - 1) / t.piece * t.piece : 0;
}
inline void cutBeforeLastPiece(const Plan& plan, Task* t, bool relay = false) {
  const size_t off = lastPieceOffset(plan, *t);
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
// values all ranks share, so all agree whether the tail runs. Asked only for those two collectives: by
// their planners and by their rows of the collective table.
constexpr size_t kTeleTailMinBytes = 1 << 20;
inline bool teleTailRuns(const CctArgs& a, int nranks) {
  return nranks > 1 && a.count * dtypeSize(a.dtype) >= kTeleTailMinBytes;
}

}  // namespace preccl
