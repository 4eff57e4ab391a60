// The host executor: runs every Task of a CCT as a resumable state machine, slot by slot, over the
// connection FIFOs, on the calling thread. It never spins a thread per VT: when no task can move it
// sleeps on the rank's Bell, which peers and the proxy ring. Stall counting happens here.
#pragma once
#include "device/primitives.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {
precclResult_t execute(precclComm* comm, CctPlan& plan);
}
