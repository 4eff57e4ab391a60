// The planners, one per (collective, algorithm): pure functions of the view, the call and the decision,
// appending this rank's tasks to a plan. The collective table (plan/coll_table.h) says which one a call
// uses; planCct runs it and finishes the plan.
#pragma once
#include "plan/call.h"
#include "plan/plan.h"

namespace preccl {

using Planner = void (*)(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);

// plan/ring.cc: rings (AllReduce, ReduceScatter, AllGather) and the ring's chains (Broadcast, Reduce).
void planRingAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planRingReduceScatter(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planRingAllGather(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planRingBroadcast(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planRingReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
// plan/tree.cc: the double binary tree.
void planTreeAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planTreeBroadcast(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planTreeReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
// plan/doubling.cc: recursive doubling, for a call within one slot.
void planDoublingAllReduce(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
// plan/alltoall.cc: every rank to every rank (AlltoAll; `sendbuff` may be a staging copy), and to or from
// a root (Gather, Scatter).
void planAlltoAll(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planGather(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
void planScatter(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);
// plan/p2p.cc: a group's sends and receives (self-sends paired with self-receives in order; the caller
// checked that they pair up).
void planSendRecv(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);

}  // namespace preccl
