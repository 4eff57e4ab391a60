// Version, error strings, user reduction ops, and the visibility API.
#include <cstring>

#include "core/comm.h"
#include "core/debug.h"
#include "core/probe.h"
#include "reduce/dtype.h"

using namespace preccl;

extern "C" {

precclResult_t precclGetVersion(int* version) {
  if (!version) return PRECCL_ERR(nullptr, precclInvalidArgument, "GetVersion: version is NULL");
  *version = PRECCL_VERSION_CODE;
  return precclSuccess;
}

const char* precclGetErrorString(precclResult_t result) {
  switch (result) {
    case precclSuccess: return "no error";
    case precclUnhandledCudaError: return "unhandled cuda error (run with PRECCL_DEBUG=INFO for details)";
    case precclSystemError: return "unhandled system error (run with PRECCL_DEBUG=INFO for details)";
    case precclInternalError: return "internal error - please report this issue to the PReCCL developers";
    case precclInvalidArgument: return "invalid argument (run with PRECCL_DEBUG=WARN for details)";
    case precclInvalidUsage: return "invalid usage (run with PRECCL_DEBUG=WARN for details)";
    case precclRemoteError: return "remote process exited or there was a network error";
    case precclInProgress: return "PReCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* precclGetLastError(precclComm_t comm) {
  if (!isLiveComm(comm)) comm = nullptr;
  return lastErrorText(comm);
}

void precclResetDebugInit(void) { resetLogLevel(); }

precclResult_t precclRedOpCreatePreMulSum(precclRedOp_t* op, void* scalar, precclDataType_t datatype,
                                          precclScalarResidence_t residence, precclComm_t comm) {
  PRECCL_CHECK(checkComm(comm, "RedOpCreatePreMulSum"));
  if (!op || !scalar) return PRECCL_ERR(comm, precclInvalidArgument, "RedOpCreatePreMulSum: op or scalar is NULL");
  if (!dtypeValid(static_cast<int>(datatype)))
    return PRECCL_ERR(comm, precclInvalidArgument, "RedOpCreatePreMulSum: invalid data type {}", static_cast<int>(datatype));
  if (residence != precclScalarDevice && residence != precclScalarHostImmediate)
    return PRECCL_ERR(comm, precclInvalidArgument, "RedOpCreatePreMulSum: invalid residence {}", static_cast<int>(residence));
  UserOp u;
  u.live = true;
  u.dtype = datatype;
  u.op.kind = RedKind::Sum;
  u.op.preMul = true;
  // Host memory on the CPU build: the scalar is read now, for both residences.
  memcpy(u.op.scalar, scalar, dtypeSize(datatype));
  std::lock_guard<std::mutex> lock(comm->opsMutex);
  size_t idx = 0;
  while (idx < comm->userOps.size() && comm->userOps[idx].live) idx++;
  if (idx == comm->userOps.size()) comm->userOps.push_back(u);
  else comm->userOps[idx] = u;
  *op = static_cast<precclRedOp_t>(precclNumOps + idx);
  return precclSuccess;
}

precclResult_t precclRedOpDestroy(precclRedOp_t op, precclComm_t comm) {
  PRECCL_CHECK(checkComm(comm, "RedOpDestroy"));
  int o = static_cast<int>(op);
  if (o >= 0 && o < precclNumOps)
    return PRECCL_ERR(comm, precclInvalidArgument, "RedOpDestroy: op {} is built in and cannot be destroyed", o);
  std::lock_guard<std::mutex> lock(comm->opsMutex);
  size_t idx = static_cast<size_t>(o) - precclNumOps;
  if (o < 0 || idx >= comm->userOps.size() || !comm->userOps[idx].live)
    return PRECCL_ERR(comm, precclInvalidArgument, "RedOpDestroy: op {} is not a live user op", o);
  comm->userOps[idx].live = false;
  return precclSuccess;
}

precclResult_t precclCommGetVtStats(precclComm_t comm, precclVtStats_t* stats, int* n) {
  PRECCL_CHECK(checkComm(comm, "CommGetVtStats"));
  if (!n || (*n > 0 && !stats)) return PRECCL_ERR(comm, precclInvalidArgument, "CommGetVtStats: NULL argument");
  std::lock_guard<std::mutex> lock(comm->execMutex);
  int want = *n;
  for (int v = 0; v < comm->nVTs && v < want; v++) {
    const VtCounters& c = comm->vtStats[v];
    bool remote = comm->topo.nHosts() > 1 || comm->topo.shmDisabled;
    precclVtStats_t& s = stats[v];
    s.vt = v;
    s.nic = remote ? comm->topo.nicFor(comm->rank, v) : -1;
    s.bytes = c.bytes;
    s.stalls = c.stalls;
    s.stallNs = c.stallNs;
    s.lastBytes = c.lastBytes;
    s.lastStalls = c.lastStalls;
    s.lastStallNs = c.lastStallNs;
    s.share = c.lastShare;
    s.estimateNs = modelEstimateNs(comm->policy.model, v, c.lastBytes);
    s.state = vtState(comm, v);
    s.stateEpoch = comm->vtStateEpoch[v];
    s.relayedBytes = c.relayed;
    s.lastRelayedBytes = c.lastRelayed;
  }
  *n = comm->nVTs;
  return precclSuccess;
}

precclResult_t precclCommGetEpoch(precclComm_t comm, uint64_t* epoch) {
  PRECCL_CHECK(checkComm(comm, "CommGetEpoch"));
  if (!epoch) return PRECCL_ERR(comm, precclInvalidArgument, "CommGetEpoch: epoch is NULL");
  std::lock_guard<std::mutex> lock(comm->execMutex);
  *epoch = comm->epoch;
  return precclSuccess;
}

}  // extern "C"
