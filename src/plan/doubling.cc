// Recursive doubling: a call that fits in one slot, on one VT, in ceil(log2 n) exchanges (two more
// where n is not a power of two), where the tree takes twice the hops and the ring 2(n - 1). Positions
// are ring positions, so the first exchanges stay within a host.
//
// Every rank of a pair computes the same expression, lower group's value first: the two ends of an
// exchange hold the same bits after it (even where the op is not exactly commutative: the sign of a
// zero under max and min, a NaN's payload). The order of reduction depends only on the ranks, never on
// the VT, so the bits do not depend on the allocation, the mask or a retry.
#include <vector>

#include "plan/layout.h"
#include "plan/planners.h"
#include "plan/steps.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// One exchange with `peer`: this rank's value goes out as it is, then the peer's is combined with it in
// the pair's order, into dst.
void exchange(Plan* plan, int32_t peer, char* dst, size_t bytes, bool lowerHalf, bool last) {
  plan->add(steps::send(peer, dst, bytes));
  Step s = steps::recvReduceCopy({peer}, dst, dst, bytes);
  s.srcPlain = lowerHalf;
  s.srcLast = !lowerHalf;
  s.post = last;
  plan->add(s);
}

// From this size on, the exchanges halve what they move (Rabenseifner's reduce-scatter by recursive
// halving, then the allgather by recursive doubling): 2 log2(m) messages of 2 (m - 1) / m of the bytes in
// all, where whole exchanges send log2(m) times the bytes; below it the fewer messages win (on loopback
// sockets halving 16 KiB took 1.2-1.4x as long at 4-16 ranks, 64 KiB 0.6-0.9x).
constexpr size_t kHalvingMinBytes = 32 * 1024;

// The same pairs and order as the whole exchanges (distance 1, 2, 4 ...; the lower group's value first), so
// every element has the same expression, and bits, as there; but each exchange keeps half of what is left
// (the lower group the lower half) and sends the other half, and once every rank holds its part reduced,
// the parts go back the way they came, the last pair first.
template <typename EdgeTo>
void halveAndDouble(Plan* plan, int pos, int m, size_t esz, size_t count, char* dst, EdgeTo edgeTo) {
  struct Range { size_t lo, hi; };
  std::vector<Range> held;  // the range this rank held before each halving
  Range r{0, count};
  for (int k = 1; k < m; k *= 2) {
    held.push_back(r);
    const size_t mid = r.lo + (r.hi - r.lo) / 2;
    const bool lower = (pos & k) == 0;
    const Range keep = lower ? Range{r.lo, mid} : Range{mid, r.hi}, give = lower ? Range{mid, r.hi} : Range{r.lo, mid};
    const int32_t peer = edgeTo(pos ^ k);
    plan->add(steps::send(peer, dst + give.lo * esz, (give.hi - give.lo) * esz));
    Step s = steps::recvReduceCopy({peer}, dst + keep.lo * esz, dst + keep.lo * esz, (keep.hi - keep.lo) * esz);
    s.srcPlain = lower;
    s.srcLast = !lower;
    s.post = 2 * k == m;  // each element is finished on the one rank that holds it
    plan->add(s);
    r = keep;
  }
  for (int k = m / 2; k >= 1; k /= 2) {
    const Range whole = held.back();
    held.pop_back();
    const Range other = (pos & k) == 0 ? Range{r.hi, whole.hi} : Range{whole.lo, r.lo};
    const int32_t peer = edgeTo(pos ^ k);
    plan->add(steps::send(peer, dst + r.lo * esz, (r.hi - r.lo) * esz));
    plan->add(steps::recv(peer, dst + other.lo * esz, (other.hi - other.lo) * esz));
    r = whole;
  }
}

}  // namespace

// The largest power of two m <= n: positions from m on fold into position p - m first and get the
// result from it last.
void planDoublingAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const size_t esz = dtypeSize(a.dtype), bytes = a.count * esz;
  int vt = -1;
  for (int i = 0; i < int(d.al.vt.size()) && vt < 0; i++)
    if (d.al.vt[size_t(i)].count > 0) vt = i;
  if (vt < 0) return;
  const Topology& t = *v.topo;
  const int n = v.nranks, pos = t.posOf[v.rank];
  int m = 1;
  while (m * 2 <= n) m *= 2;
  auto edgeTo = [&](int p) { return plan->edge({t.order[size_t(p)], vt, -1}); };
  const char* src = static_cast<const char*>(a.sendbuff);
  char* dst = static_cast<char*>(a.recvbuff);
  plan->begin(vt, pieceBytes(v.slotBytes, esz, 0));
  if (pos >= m) {  // fold in, then wait for the result
    plan->add(steps::reduceSend(edgeTo(pos - m), src, bytes));
    plan->add(steps::recv(edgeTo(pos - m), dst, bytes));
    return;
  }
  // This rank's input, pre-multiplied once: every later step combines partial results.
  Step first = steps::reduceCopy(src, dst, bytes);
  first.post = m == 1;  // one rank: its input is the result
  plan->add(first);
  if (pos + m < n) {
    Step fold = steps::recvReduceCopy({edgeTo(pos + m)}, dst, dst, bytes);
    fold.srcPlain = true;
    fold.post = false;
    plan->add(fold);
  }
  if (bytes >= kHalvingMinBytes && a.count >= size_t(m)) {
    halveAndDouble(plan, pos, m, esz, a.count, dst, edgeTo);
  } else {
    for (int k = 1; k < m; k *= 2) exchange(plan, edgeTo(pos ^ k), dst, bytes, (pos & k) == 0, 2 * k == m);
  }
  if (pos + m < n) plan->add(steps::send(edgeTo(pos + m), dst, bytes));
}

}  // namespace preccl
