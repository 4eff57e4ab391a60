// Launching a CCT: allocation from the policy, plan, execution on the calling thread, telemetry update.
// And where a call goes first: into the open group, onto a stream, or straight to launch.
#pragma once
#include "core/plan.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {
precclResult_t launchCct(precclComm* comm, const CctArgs& a);
// Entry of every collective and point-to-point call after its arguments were checked.
precclResult_t submit(precclComm* comm, precclStream_t stream, CctArgs a);
// The models' estimate of a's time on this rank, from the shares its class holds now (nothing changes);
// false while some VT it would use has no model yet.
bool estimateCctNs(precclComm* comm, const CctArgs& a, uint64_t* ns);
}
