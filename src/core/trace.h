// PRECCL_TRACE=<file>: one JSON line per collective per rank (epoch, collective, per-VT bytes, stalls,
// elapsed time, share and model estimate), appended with one write() per line so ranks can share a file.
#pragma once
#include "exec/executor.h"
#include "plan/call.h"
#include "plan/plan.h"

struct precclComm;

namespace preccl {
void traceOpen(precclComm* comm);   // no-op unless PRECCL_TRACE is set
void traceClose(precclComm* comm);
void traceCct(precclComm* comm, const CctArgs& a, const Decision& d, const Plan& plan, const RunOut& out);
}
