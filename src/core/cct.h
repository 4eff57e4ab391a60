// The CCT pipeline: one call on this rank, from its checked arguments to its end (docs/architecture.md):
//   decide (core/decide.h) -> plan (plan/coll_table.h) -> bind (exec/bind.h) -> run the attempt
//   (core/run_attempt.h; an agreed abort masks the failed VTs and goes round again) -> settle
//   (core/settle.h: rejoin, telemetry, trace, the next epoch).
#pragma once
#include "plan/call.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {

precclResult_t launchCct(precclComm* comm, const CctArgs& a);

}  // namespace preccl
