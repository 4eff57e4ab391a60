// The CCT pipeline's first step: what the policy decides for a call (core/cct.cc), from the communicator's
// telemetry, model and mask: the algorithm, each VT's range, each point-to-point operation's split. And the
// view of the communicator a planner gets.
#pragma once
#include <cstdint>

#include "plan/call.h"
#include "policy/policy.h"

struct precclComm;

namespace preccl {

// This call's algorithm (PRECCL_ALGO, or Auto's size rules where the collective has the algorithms).
PlanAlgo chooseAlgo(const precclComm* comm, const CctArgs& a);
// What this call's policy keys are: its collective, algorithm and bytes on the wire per element.
AllocKey allocKey(const precclComm* comm, const CctArgs& a, bool tree);
// The decision for one attempt under the current mask.
void decideCct(precclComm* comm, const CctArgs& a, Decision* d);
// What the planners see of this rank and the communicator now.
PlanView planView(const precclComm* comm);
// The models' estimate of a's time on this rank, from the shares its class holds now (nothing changes);
// false while some VT it would use has no model yet.
bool estimateCctNs(precclComm* comm, const CctArgs& a, uint64_t* ns);

}  // namespace preccl
