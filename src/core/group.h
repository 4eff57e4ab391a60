// GroupStart/GroupEnd: calls in a group are issued together at the outermost GroupEnd. All point-to-point
// calls of one communicator become one CCT (so any order works); several communicators run concurrently,
// one thread each (one thread may drive several ranks, as with CommInitAll).
#pragma once
#include "plan/call.h"
#include "preccl/preccl.h"

struct precclComm;

namespace preccl {
int groupDepth();
precclResult_t groupAdd(precclComm* comm, precclStream_t stream, CctArgs a);
precclResult_t groupStart();
precclResult_t groupEnd();
// Closes the group like groupEnd but drops its calls; *estimatedUs: the models' estimate of the slowest
// communicator's calls (-1: not the outermost end, or no model yet).
precclResult_t groupSimulateEnd(double* estimatedUs);
}
