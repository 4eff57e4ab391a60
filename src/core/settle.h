// The CCT pipeline's last step (core/cct.cc), once an attempt committed: the masked VTs every rank can take
// back rejoin, the telemetry the CCT carried becomes the communicator's (or waits for the next CCT), the
// shares and the trace are recorded, and the epoch advances.
#pragma once
#include "exec/executor.h"
#include "plan/call.h"
#include "plan/plan.h"

struct precclComm;

namespace preccl {

void settleCct(precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, const RunOut& out,
               const ExecFault& committed, bool agreed);

}  // namespace preccl
