// What a planner is given: the call (CctArgs), what this rank sees of the communicator (PlanView) and what
// the policy decided for it (Decision). Nothing here holds a connection or a communicator, so a plan can be
// built for any rank of any topology without a live one (tests/test_plan_check.cc builds every rank's).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/coll.h"
#include "plan/plan.h"
#include "policy/allocation.h"
#include "policy/rail_split.h"
#include "preccl/preccl.h"
#include "reduce/reduce.h"
#include "topo/topology.h"

namespace preccl {

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
  std::vector<P2POp> p2p;  // SendRecv only: the group's sends and receives, in call order
};

struct PlanView {
  int rank = 0, nranks = 1, nVTs = 1;
  const Topology* topo = nullptr;
  size_t slotBytes = 0;               // the FIFOs' slot
  RelayMode relay = RelayMode::Auto;  // under rail affinity (Topology::rail)
  uint64_t liveMask = ~0ull;          // the VTs not masked (policy/policy.h isLive)
  bool checkDigest = false;           // PRECCL_CHECK_ALLOC
};

struct Decision {
  PlanAlgo algo = PlanAlgo::Ring;
  Allocation al;                 // each VT's element range of the collective
  std::vector<Allocation> ops;   // SendRecv: each operation's split of its bytes over the VTs, in call order
};

// The edge that carries `from`'s bytes for `to` on VT vt, seen from `me` (one of the two ends): direct, or
// under rail affinity `from`'s relay on that VT when `to` is on another host (a relay edge naming the far
// end: docs/architecture.md, "Rank-NIC affinity and the relay").
inline EdgeName railEdgeName(const Topology& t, int me, int from, int to, int vt) {
  const int relay = t.relayFor(from, vt);
  if (relay == from || t.sameHost(from, to)) return EdgeName{from == me ? to : from, vt, -1};
  return from == me ? EdgeName{relay, vt, to} : EdgeName{relay, vt, from};
}

}  // namespace preccl
