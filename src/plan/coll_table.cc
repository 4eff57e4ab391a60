#include "plan/coll_table.h"

#include <algorithm>

#include "plan/layout.h"
#include "policy/policy.h"
#include "reduce/dtype.h"

namespace preccl {

namespace {

// ---- bytes on the wire ----

// A tree's busiest rank sends its range up once and down to each child: 2 of them at 4 ranks, 3 from 5
// on (a fixed 3 overstated 4 ranks' bytes 1.5x against the fit, shrinking alpha's weight).
WireBytes wireAllReduce(int n, bool tree, int) {
  if (tree) return {uint32_t(treeMaxSends(n, true, true)), 1};
  return {uint32_t(2 * (n - 1)), uint32_t(n)};
}
WireBytes wireBroadcast(int n, bool tree, int) { return {tree ? uint32_t(treeMaxSends(n, false, true)) : 1u, 1}; }
WireBytes wireOnce(int, bool, int) { return {1, 1}; }  // up the tree or along the chain: every rank sends once
WireBytes wireToAll(int n, bool, int) { return {uint32_t(n - 1), 1}; }
// Under rail affinity a VT's owner sends its whole host's part of the VT: its own and its relays'.
WireBytes wireAlltoAll(int n, bool, int hostRanks) { return {uint32_t((n - 1) * std::max(1, hostRanks)), 1}; }

// ---- how the telemetry reaches every rank ----

// A ring AllReduce whose range holds a part of every chunk (n-1 hops of cumulative maxima), a tree
// AllReduce with any bytes (up to the root, whose last slots down hold everything); recursive doubling
// none (its slots travel on one VT only).
bool carriesAllReduce(const CarryQuery& q) {
  if (q.algo == PlanAlgo::Doubling) return false;
  if (q.algo == PlanAlgo::Tree) return q.range.count > 0;
  return ringEveryChunk(q.range.offset, q.range.count, q.nranks, ringBlockElems(dtypeSize(q.args->dtype)));
}
bool carriesAnyBytes(const CarryQuery& q) { return q.range.count > 0; }  // a ring AllGather or ReduceScatter
bool carriesTail(const CarryQuery& q) { return teleTailRuns(*q.args, q.nranks); }  // Broadcast, Reduce
// Every rank whose record of the older epoch may be other than zero (it sent on the VT then) sends on the
// VT now, to every rank; a rank that sent nothing holds a zero record, which changes no maximum.
bool carriesSenders(const CarryQuery& q) {
  const size_t v = size_t(q.vt);
  for (int r = 0; r < q.nranks; r++)
    if ((q.sendersThen->empty() || (*q.sendersThen)[v][size_t(r)]) && !(*q.sendersNow)[v][size_t(r)]) return false;
  return true;
}
bool carriesNothing(const CarryQuery&) { return false; }  // Gather, Scatter: to or from one rank

// ---- input the CCT overwrites ----

size_t overwritesAllReduce(const CctArgs& a, int, int) {
  return a.sendbuff == a.recvbuff ? a.count * dtypeSize(a.dtype) : 0;
}
size_t overwritesReduce(const CctArgs& a, int rank, int) {
  return a.sendbuff == a.recvbuff && rank == a.root ? a.count * dtypeSize(a.dtype) : 0;
}
size_t overwritesReduceScatter(const CctArgs& a, int rank, int nranks) {
  const size_t esz = dtypeSize(a.dtype);
  return static_cast<const char*>(a.sendbuff) + size_t(rank) * a.count * esz == a.recvbuff ? size_t(nranks) * a.count * esz : 0;
}
size_t overwritesNothing(const CctArgs&, int, int) { return 0; }

// In the enum's order (base/coll.h).
constexpr CollRow kRows[kNumColls] = {
    // coll, collective, ring, tree, autoTree, doubling, shifts, wire, carries, overwrites, stagesInPlace
    {Coll::AllReduce, true, planRingAllReduce, planTreeAllReduce, true, planDoublingAllReduce, true, wireAllReduce, carriesAllReduce, overwritesAllReduce, false},
    {Coll::Broadcast, true, planRingBroadcast, planTreeBroadcast, false, nullptr, true, wireBroadcast, carriesTail, overwritesNothing, false},
    {Coll::Reduce, true, planRingReduce, planTreeReduce, false, nullptr, true, wireOnce, carriesTail, overwritesReduce, false},
    {Coll::AllGather, true, planRingAllGather, nullptr, false, nullptr, true, wireToAll, carriesAnyBytes, overwritesNothing, false},
    {Coll::ReduceScatter, true, planRingReduceScatter, nullptr, false, nullptr, true, wireToAll, carriesAnyBytes, overwritesReduceScatter, false},
    {Coll::AlltoAll, true, planAlltoAll, nullptr, false, nullptr, true, wireAlltoAll, carriesSenders, overwritesNothing, true},
    {Coll::Gather, true, planGather, nullptr, false, nullptr, false, wireToAll, carriesNothing, overwritesNothing, false},
    {Coll::Scatter, true, planScatter, nullptr, false, nullptr, false, wireToAll, carriesNothing, overwritesNothing, false},
    {Coll::SendRecv, false, planSendRecv, nullptr, false, nullptr, false, wireToAll, carriesNothing, overwritesNothing, false},
};

static_assert([] {
  for (int i = 0; i < kNumColls; i++)
    if (static_cast<int>(kRows[i].coll) != i) return false;
  return true;
}(), "kRows is in the enum's order");

// The tasks of masked VTs go (a planner may add a header-only tail on a VT without bytes); the `after`
// ranges name tasks of one VT, so they stay contiguous and only move.
void dropMaskedTasks(const PlanView& v, Plan* plan) {
  if (std::all_of(plan->tasks.begin(), plan->tasks.end(), [&](const Task& t) { return isLive(v.liveMask, t.vt); })) return;
  std::vector<uint32_t> newIndex(plan->tasks.size() + 1);
  std::vector<Task> kept;
  std::vector<Step> steps;
  for (size_t i = 0; i < plan->tasks.size(); i++) {
    newIndex[i] = uint32_t(kept.size());
    Task t = plan->tasks[i];
    if (!isLive(v.liveMask, t.vt)) continue;
    const uint32_t first = uint32_t(steps.size());
    for (uint32_t k = 0; k < t.nsteps; k++) steps.push_back(plan->step(t, k));
    t.firstStep = first;
    kept.push_back(t);
  }
  newIndex[plan->tasks.size()] = uint32_t(kept.size());
  for (Task& t : kept) t.afterFirst = newIndex[t.afterFirst], t.afterLast = newIndex[t.afterLast];
  plan->tasks = std::move(kept);
  plan->steps = std::move(steps);
}

// The cut is all or nothing: a VT without one would leave its records of this CCT unknown somewhere, and
// on VTs with one the older cargo stops riding at the cut, so it would not be complete either. Every rank
// gets the same answer (the planners decide from the allocation).
void settleCuts(const PlanView& v, Plan* plan) {
  if (plan->cutsRule >= 0) {
    plan->cuts = v.nranks > 1 && plan->cutsRule == 1;
  } else {
    const uint64_t all = v.nVTs >= 64 ? ~0ull : (1ull << v.nVTs) - 1;
    uint64_t cut = ~v.liveMask & all;  // a masked VT carries no records
    for (const Task& t : plan->tasks)
      if (t.cutStep != Task::kNoCut && t.vt >= 0 && t.vt < v.nVTs && t.vt < 64) cut |= 1ull << t.vt;
    plan->cuts = v.nranks > 1 && cut == all;
  }
  if (!plan->cuts)
    for (Task& t : plan->tasks) t.cutStep = Task::kNoCut;
}

}  // namespace

const CollRow& collRow(Coll c) { return kRows[static_cast<int>(c)]; }

void planCct(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan) {
  const CollRow& row = collRow(a.coll);
  plan->coll = a.coll;
  // The decided algorithm where the row has it, else the ring's.
  PlanAlgo algo = d.algo;
  if ((algo == PlanAlgo::Tree && !row.tree) || (algo == PlanAlgo::Doubling && !row.doubling)) algo = PlanAlgo::Ring;
  plan->algo = algo;
  const Planner planner = algo == PlanAlgo::Tree ? row.tree : algo == PlanAlgo::Doubling ? row.doubling : row.ring;
  plan->dtype = a.dtype;
  plan->esz = dtypeSize(a.dtype);
  plan->op = a.op;
  if (row.collective && v.checkDigest) {  // only a reader that checks it looks at it
    plan->digest = d.al.digest() ^ static_cast<uint32_t>(a.coll) * 0x9e3779b9u ^ static_cast<uint32_t>(a.root);
    plan->checkDigest = true;
  }
  planner(v, a, d, plan);
  dropMaskedTasks(v, plan);
  if (row.collective) settleCuts(v, plan);
}

}  // namespace preccl
