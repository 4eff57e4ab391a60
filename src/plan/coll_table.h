// The collective table: one row per collective with everything the library does differently for it (its
// planners, its bytes on the wire, whether the policy shifts it, how its telemetry reaches every rank,
// which of its input it overwrites), as UCC keeps one table of algorithms per collective. The rest of the
// library looks a collective up here and never switches on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan/call.h"
#include "plan/plan.h"
#include "plan/planners.h"

namespace preccl {

// Bytes the busiest rank sends per element of a VT's range, num / den: what its telemetry records, so
// what the model converts a range into.
struct WireBytes {
  uint32_t num = 1, den = 1;
};

// Whether a CCT carries every rank's telemetry of an older epoch to every rank on one VT (the cargo, and
// from the cut on its own records): asked by the pipeline after the CCT (core/settle.cc).
struct CarryQuery {
  int nranks = 1;
  PlanAlgo algo = PlanAlgo::Ring;
  const CctArgs* args = nullptr;
  VtRange range;  // the VT's range in this CCT
  int vt = 0;
  // Per VT and rank: who sends on the VT now (Plan::senders), and who may hold a nonzero record of the
  // older epoch (empty: every rank). Only AlltoAll's planner knows them.
  const std::vector<std::vector<char>>* sendersNow = nullptr;
  const std::vector<std::vector<char>>* sendersThen = nullptr;
};

struct CollRow {
  Coll coll;
  // Every rank of the communicator takes part: the call advances the epoch, carries telemetry and can be
  // agreed on and retried. A group's sends and receives involve only some ranks.
  bool collective;
  Planner ring;      // the ring's (or the only) planner
  Planner tree;      // the tree's; null where there is none
  bool autoTree;     // PRECCL_ALGO=auto takes the tree below Config::treeMaxBytes
  Planner doubling;  // recursive doubling, for a call within one slot; null where there is none
  bool shifts;       // the policies move its ranges between VTs (else the equal split)
  WireBytes (*wire)(int nranks, bool tree, int hostRanks);
  bool (*carries)(const CarryQuery& q);
  // The bytes of the caller's input the CCT itself overwrites before every rank is done with them (in
  // place), so that a retry would not find them: 0 when there are none.
  size_t (*overwrites)(const CctArgs& a, int rank, int nranks);
  // In place, its input must be staged whatever happens (AlltoAll: block q is overwritten by rank q while
  // still being sent).
  bool stagesInPlace;
};

const CollRow& collRow(Coll c);

// This rank's plan of one call (one attempt): the row's planner for the decided algorithm, then the tasks
// of masked VTs dropped and the telemetry cuts settled (all or nothing).
void planCct(const PlanView& v, const CctArgs& a, const Decision& d, Plan* plan);

}  // namespace preccl
