// Where a call goes once its arguments are checked: into the open group, onto a stream, or straight to
// the CCT pipeline (core/cct.h).
#pragma once
#include "plan/call.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {
// Entry of every collective and point-to-point call after its arguments were checked.
precclResult_t submit(precclComm* comm, precclStream_t stream, CctArgs a);
}
