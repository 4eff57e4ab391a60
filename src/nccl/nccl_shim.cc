// libnccl.so.2: NCCL's C API over PReCCL's (docs/nccl.md). The values of every result, type and op are
// NCCL's already (include/preccl/preccl.h), so each function converts handles and the config and calls its
// preccl twin. Every function is defined as pnccl<Name>; nccl<Name> is a weak alias of it, as in NCCL, so
// that a profiler can interpose the nccl names and still reach the library through the pnccl ones.
#include <cstddef>
#include <cstring>

#include "core/debug.h"
#include "nccl/shim_device.h"
#include "preccl/nccl/nccl.h"
#include "preccl/preccl.h"

namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(precclUniqueId));
static_assert(int(ncclNumResults) == int(precclNumResults) && int(ncclNumTypes) == int(precclNumTypes) &&
              int(ncclNumOps) == int(precclNumOps));

precclComm_t P(ncclComm_t c) { return reinterpret_cast<precclComm_t>(c); }
ncclResult_t N(precclResult_t r) { return static_cast<ncclResult_t>(r); }
precclDataType_t T(ncclDataType_t t) { return static_cast<precclDataType_t>(t); }
precclRedOp_t O(ncclRedOp_t o) { return static_cast<precclRedOp_t>(o); }
// Every call completes before returning, which orders it before any later work on any stream. With a
// device in use it also waits for the work already on its stream first (nccl/shim_device.h); otherwise
// the stream is accepted and not used.
constexpr precclStream_t kNoStream = nullptr;
#define NCCL_STREAM(stream)                                                       \
  do {                                                                            \
    if (precclResult_t r_ = preccl::shim::waitStream(stream); r_ != precclSuccess) \
      return N(r_);                                                               \
  } while (0)

precclUniqueId U(const ncclUniqueId& id) {
  precclUniqueId u;
  memcpy(&u, &id, sizeof(u));
  return u;
}

// Whether the caller's config (of `size` bytes, maybe from another NCCL version) holds the field at
// offset `off` of `bytes`.
bool has(const ncclConfig_t* c, size_t off, size_t bytes) { return c->size >= off + bytes; }
#define NCCL_HAS(c, field) has((c), offsetof(ncclConfig_t, field), sizeof((c)->field))

// NCCL's config to PReCCL's. NULL stays NULL (the defaults).
ncclResult_t toPreccl(const ncclConfig_t* in, precclConfig_t* out, precclConfig_t** use, const char* fn) {
  *use = nullptr;
  if (!in) return ncclSuccess;
  if (in->magic != NCCL_CONFIG_MAGIC || !NCCL_HAS(in, blocking))
    return N(PRECCL_ERR(nullptr, precclInvalidArgument,
                        "{}: config was not initialised with NCCL_CONFIG_INITIALIZER (magic {:#x}, size {})", fn,
                        in->magic, in->size));
  *out = PRECCL_CONFIG_INITIALIZER;
  out->blocking = in->blocking;
  if (NCCL_HAS(in, commName)) out->commName = in->commName;
  if (NCCL_HAS(in, splitShare)) out->splitShare = in->splitShare;
  *use = out;
  return ncclSuccess;
}

}  // namespace

#define NCCL_API(ret, name, args)                                        \
  extern "C" __attribute__((visibility("default"))) ret pnccl##name args; \
  extern "C" __attribute__((visibility("default"), weak, alias("pnccl" #name))) ret nccl##name args; \
  extern "C" ret pnccl##name args

NCCL_API(ncclResult_t, GetVersion, (int* version)) {
  if (!version) return N(PRECCL_ERR(nullptr, precclInvalidArgument, "ncclGetVersion: version is NULL"));
  *version = NCCL_VERSION_CODE;  // the API implemented, so callers' version checks take NCCL 2.28's paths
  return ncclSuccess;
}

NCCL_API(ncclResult_t, GetUniqueId, (ncclUniqueId* uniqueId)) {
  return N(precclGetUniqueId(reinterpret_cast<precclUniqueId*>(uniqueId)));
}

NCCL_API(ncclResult_t, CommInitRankConfig,
         (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config)) {
  precclConfig_t cfg, *use;
  if (ncclResult_t r = toPreccl(config, &cfg, &use, "ncclCommInitRankConfig"); r != ncclSuccess) return r;
  preccl::shim::useDevice();
  return N(precclCommInitRankConfig(reinterpret_cast<precclComm_t*>(comm), nranks, U(commId), rank, use));
}

NCCL_API(ncclResult_t, CommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank)) {
  preccl::shim::useDevice();
  return N(precclCommInitRank(reinterpret_cast<precclComm_t*>(comm), nranks, U(commId), rank));
}

NCCL_API(ncclResult_t, CommInitAll, (ncclComm_t* comm, int ndev, const int* devlist)) {
  preccl::shim::useDevice();
  return N(precclCommInitAll(reinterpret_cast<precclComm_t*>(comm), ndev, devlist));
}

NCCL_API(ncclResult_t, CommInitRankScalable,
         (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config)) {
  precclConfig_t cfg, *use;
  if (ncclResult_t r = toPreccl(config, &cfg, &use, "ncclCommInitRankScalable"); r != ncclSuccess) return r;
  preccl::shim::useDevice();
  return N(precclCommInitRankScalable(reinterpret_cast<precclComm_t*>(newcomm), nranks, myrank, nId,
                                      reinterpret_cast<precclUniqueId*>(commIds), use));
}

NCCL_API(ncclResult_t, CommFinalize, (ncclComm_t comm)) { return N(precclCommFinalize(P(comm))); }
NCCL_API(ncclResult_t, CommDestroy, (ncclComm_t comm)) { return N(precclCommDestroy(P(comm))); }
NCCL_API(ncclResult_t, CommAbort, (ncclComm_t comm)) { return N(precclCommAbort(P(comm))); }
NCCL_API(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags)) {
  return N(precclCommRevoke(P(comm), revokeFlags));
}

NCCL_API(ncclResult_t, CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) {
  precclConfig_t cfg, *use;
  if (ncclResult_t r = toPreccl(config, &cfg, &use, "ncclCommSplit"); r != ncclSuccess) return r;
  return N(precclCommSplit(P(comm), color, key, reinterpret_cast<precclComm_t*>(newcomm), use));
}

NCCL_API(ncclResult_t, CommShrink,
         (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,
          int shrinkFlags)) {
  precclConfig_t cfg, *use;
  if (ncclResult_t r = toPreccl(config, &cfg, &use, "ncclCommShrink"); r != ncclSuccess) return r;
  return N(precclCommShrink(P(comm), excludeRanksList, excludeRanksCount, reinterpret_cast<precclComm_t*>(newcomm),
                            use, shrinkFlags));
}

NCCL_API(const char*, GetErrorString, (ncclResult_t result)) {
  return precclGetErrorString(static_cast<precclResult_t>(result));
}
NCCL_API(const char*, GetLastError, (ncclComm_t comm)) { return precclGetLastError(P(comm)); }
NCCL_API(void, ResetDebugInit, (void)) { precclResetDebugInit(); }

NCCL_API(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError)) {
  return N(precclCommGetAsyncError(P(comm), reinterpret_cast<precclResult_t*>(asyncError)));
}
NCCL_API(ncclResult_t, CommCount, (const ncclComm_t comm, int* count)) { return N(precclCommCount(P(comm), count)); }
NCCL_API(ncclResult_t, CommUserRank, (const ncclComm_t comm, int* rank)) {
  return N(precclCommUserRank(P(comm), rank));
}
NCCL_API(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int* device)) {
  return N(PRECCL_ERR(nullptr, precclInvalidUsage,
                      "ncclCommCuDevice: this PReCCL build runs on host memory and has no CUDA device"));
}

NCCL_API(ncclResult_t, MemAlloc, (void** ptr, size_t size)) { return N(preccl::shim::memAlloc(ptr, size)); }
NCCL_API(ncclResult_t, MemFree, (void* ptr)) { return N(preccl::shim::memFree(ptr)); }
NCCL_API(ncclResult_t, CommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle)) {
  return N(precclCommRegister(P(comm), buff, size, handle));
}
NCCL_API(ncclResult_t, CommDeregister, (const ncclComm_t comm, void* handle)) {
  return N(precclCommDeregister(P(comm), handle));
}
NCCL_API(ncclResult_t, CommWindowRegister, (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags)) {
  return N(precclCommWindowRegister(P(comm), buff, size, reinterpret_cast<precclWindow_t*>(win), winFlags));
}
NCCL_API(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win)) {
  return N(precclCommWindowDeregister(P(comm), reinterpret_cast<precclWindow_t>(win)));
}

NCCL_API(ncclResult_t, RedOpCreatePreMulSum,
         (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm)) {
  return N(precclRedOpCreatePreMulSum(reinterpret_cast<precclRedOp_t*>(op), scalar, T(datatype),
                                      static_cast<precclScalarResidence_t>(residence), P(comm)));
}
NCCL_API(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm)) { return N(precclRedOpDestroy(O(op), P(comm))); }

NCCL_API(ncclResult_t, Reduce,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
          ncclComm_t comm, cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclReduce(sendbuff, recvbuff, count, T(datatype), O(op), root, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Bcast,
         (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclBroadcast(buff, buff, count, T(datatype), root, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Broadcast,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclBroadcast(sendbuff, recvbuff, count, T(datatype), root, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, AllReduce,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclAllReduce(sendbuff, recvbuff, count, T(datatype), O(op), P(comm), kNoStream));
}
NCCL_API(ncclResult_t, ReduceScatter,
         (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
          ncclComm_t comm, cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclReduceScatter(sendbuff, recvbuff, recvcount, T(datatype), O(op), P(comm), kNoStream));
}
NCCL_API(ncclResult_t, AllGather,
         (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclAllGather(sendbuff, recvbuff, sendcount, T(datatype), P(comm), kNoStream));
}
NCCL_API(ncclResult_t, AlltoAll,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclAlltoAll(sendbuff, recvbuff, count, T(datatype), P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Gather,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclGather(sendbuff, recvbuff, count, T(datatype), root, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Scatter,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclScatter(sendbuff, recvbuff, count, T(datatype), root, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Send,
         (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclSend(sendbuff, count, T(datatype), peer, P(comm), kNoStream));
}
NCCL_API(ncclResult_t, Recv,
         (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream)) {
  NCCL_STREAM(stream);
  return N(precclRecv(recvbuff, count, T(datatype), peer, P(comm), kNoStream));
}

NCCL_API(ncclResult_t, GroupStart, (void)) { return N(precclGroupStart()); }
NCCL_API(ncclResult_t, GroupEnd, (void)) { return N(precclGroupEnd()); }
NCCL_API(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t* simInfo)) {
  if (!simInfo || simInfo->magic != NCCL_SIM_INFO_MAGIC || simInfo->size < sizeof(ncclSimInfo_t))
    return N(PRECCL_ERR(nullptr, precclInvalidArgument,
                        "ncclGroupSimulateEnd: simInfo was not initialised with NCCL_SIM_INFO_INITIALIZER"));
  precclSimInfo_t mine = PRECCL_SIM_INFO_INITIALIZER;
  const ncclResult_t r = N(precclGroupSimulateEnd(&mine));
  if (r == ncclSuccess) simInfo->estimatedTime = mine.estimatedTime;
  return r;
}
