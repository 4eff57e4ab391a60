/*
 * PReCCL public C API.
 *
 * Shape and numeric values follow NCCL 2.28 (result codes, data types, reduction ops), so that the
 * libnccl.so.2 shim is a thin renaming layer. On the CPU build a "device buffer" is host memory and a
 * stream (precclStream_t) is a host execution queue.
 */
#ifndef PRECCL_PRECCL_H_
#define PRECCL_PRECCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define PRECCL_MAJOR 0
#define PRECCL_MINOR 1
#define PRECCL_PATCH 0
#define PRECCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define PRECCL_VERSION_CODE PRECCL_VERSION(PRECCL_MAJOR, PRECCL_MINOR, PRECCL_PATCH)

/* Same size as NCCL's unique id. Holds the root's address and port and a 128-bit secret. */
#define PRECCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[PRECCL_UNIQUE_ID_BYTES];
} precclUniqueId;

typedef struct precclComm* precclComm_t;
typedef struct precclStream* precclStream_t;
typedef struct precclWindow* precclWindow_t;

#define PRECCL_COMM_NULL NULL
#define PRECCL_SPLIT_NOCOLOR -1
/* precclCommShrink flags (NCCL's values). */
#define PRECCL_SHRINK_DEFAULT 0x00 /* the parent is idle */
#define PRECCL_SHRINK_ABORT 0x01   /* abort the parent's calls in flight first (a rank died in one) */
/* precclCommRevoke flags: only the default exists. */
#define PRECCL_REVOKE_DEFAULT 0x00
/* precclCommWindowRegister flags (NCCL's values). */
#define PRECCL_WIN_DEFAULT 0x00
#define PRECCL_WIN_COLL_SYMMETRIC 0x01

/* Same values as ncclResult_t. */
typedef enum {
  precclSuccess = 0,
  precclUnhandledCudaError = 1,
  precclSystemError = 2,
  precclInternalError = 3,
  precclInvalidArgument = 4,
  precclInvalidUsage = 5,
  precclRemoteError = 6,
  precclInProgress = 7,
  precclNumResults = 8
} precclResult_t;

/* Same values as ncclRedOp_t. Values >= precclNumOps are user ops from RedOpCreatePreMulSum. */
typedef enum {
  precclSum = 0,
  precclProd = 1,
  precclMax = 2,
  precclMin = 3,
  precclAvg = 4,
  precclNumOps = 5,
  precclMaxRedOp = 0x7fffffff
} precclRedOp_t;

/* Same values as ncclDataType_t. */
typedef enum {
  precclInt8 = 0,
  precclChar = 0,
  precclUint8 = 1,
  precclInt32 = 2,
  precclInt = 2,
  precclUint32 = 3,
  precclInt64 = 4,
  precclUint64 = 5,
  precclFloat16 = 6,
  precclHalf = 6,
  precclFloat32 = 7,
  precclFloat = 7,
  precclFloat64 = 8,
  precclDouble = 8,
  precclBfloat16 = 9,
  precclFloat8e4m3 = 10,
  precclFloat8e5m2 = 11,
  precclNumTypes = 12
} precclDataType_t;

/* Same values as ncclScalarResidence_t. On the CPU build both mean "host memory, read at call time". */
typedef enum { precclScalarDevice = 0, precclScalarHostImmediate = 1 } precclScalarResidence_t;

/* Communicator configuration. Initialise with PRECCL_CONFIG_INITIALIZER; a field left at
 * PRECCL_CONFIG_UNDEF_INT / NULL takes its environment or built-in default. */
#define PRECCL_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
  size_t size;         /* sizeof(precclConfig_t), set by the initializer */
  unsigned int magic;  /* set by the initializer */
  unsigned int version;
  int blocking;        /* 1 (default): init returns when done; 0: returns precclInProgress */
  int numVTs;          /* virtual topologies (channels); default PRECCL_NVTS or 2 x NIC count */
  const char* policy;  /* allocation policy: "preccl" (default), "static", "aimd"; default PRECCL_POLICY */
  const char* commName;
  int splitShare;      /* accepted for NCCL compatibility; ignored */
} precclConfig_t;

#define PRECCL_CONFIG_MAGIC 0x50524543u /* 'PREC' */
#define PRECCL_CONFIG_INITIALIZER                                                                   \
  {                                                                                                 \
    sizeof(precclConfig_t), PRECCL_CONFIG_MAGIC, PRECCL_VERSION_CODE, PRECCL_CONFIG_UNDEF_INT,      \
        PRECCL_CONFIG_UNDEF_INT, NULL, NULL, PRECCL_CONFIG_UNDEF_INT                               \
  }

/* Filled by precclGroupSimulateEnd; initialise with PRECCL_SIM_INFO_INITIALIZER. */
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* microseconds, from the VTs' models; -1 where no model is known yet */
} precclSimInfo_t;
#define PRECCL_SIM_INFO_MAGIC 0x50534d49u /* 'PSMI' */
#define PRECCL_SIM_INFO_INITIALIZER \
  { sizeof(precclSimInfo_t), PRECCL_SIM_INFO_MAGIC, PRECCL_VERSION_CODE, -1.0f }

/* ---- version, errors ---- */
precclResult_t precclGetVersion(int* version);
const char* precclGetErrorString(precclResult_t result);
/* The message of the error a failed communicator raised (also on its proxy thread); otherwise the last
 * error raised in this thread, which stays until the next one (as in NCCL). */
const char* precclGetLastError(precclComm_t comm);
/* Reads PRECCL_DEBUG (or NCCL_DEBUG) again. */
void precclResetDebugInit(void);

/* ---- communicators ---- */
precclResult_t precclGetUniqueId(precclUniqueId* uniqueId);
precclResult_t precclCommInitRank(precclComm_t* comm, int nranks, precclUniqueId commId, int rank);
precclResult_t precclCommInitRankConfig(precclComm_t* comm, int nranks, precclUniqueId commId, int rank,
                                        precclConfig_t* config);
/* NCCL's scalable init: nId ids, the same list on every rank. The bootstrap is a star through one root, so
 * the first id serves; the others are checked to be PReCCL ids. */
precclResult_t precclCommInitRankScalable(precclComm_t* comm, int nranks, int rank, int nId,
                                          precclUniqueId* commIds, precclConfig_t* config);
/* ndev ranks in this process, one thread each; devlist may be NULL (ranks 0..ndev-1). */
precclResult_t precclCommInitAll(precclComm_t* comms, int ndev, const int* devlist);
precclResult_t precclCommSplit(precclComm_t comm, int color, int key, precclComm_t* newcomm,
                               precclConfig_t* config);
/* A new communicator of the ranks not in excludeRanks (the same list on every one of them, which need not
 * include the excluded ranks: they may be dead). Ranks keep their order; the gaps close. No excluded rank
 * takes part, not even the one whose process hosted the bootstrap root. A communicator is shrunk at most
 * once (shrink the new one again). config NULL: the parent's settings. */
precclResult_t precclCommShrink(precclComm_t comm, int* excludeRanks, int excludeCount, precclComm_t* newcomm,
                                precclConfig_t* config, int shrinkFlags);
/* Stops the calls in flight on comm (they return an error) and returns when none runs. Afterwards the
 * communicator takes no more calls: only Split, Shrink, Destroy and Abort (as NCCL's). */
precclResult_t precclCommRevoke(precclComm_t comm, int revokeFlags);
precclResult_t precclCommFinalize(precclComm_t comm);
precclResult_t precclCommDestroy(precclComm_t comm);
precclResult_t precclCommAbort(precclComm_t comm);
precclResult_t precclCommGetAsyncError(precclComm_t comm, precclResult_t* asyncError);
precclResult_t precclCommCount(const precclComm_t comm, int* count);
precclResult_t precclCommUserRank(const precclComm_t comm, int* rank);

/* ---- memory ----
 * On the CPU build buffers are host memory: MemAlloc gives page-aligned memory, registration and windows
 * are accepted and kept (a handle to give back later) but change nothing in how bytes move. */
precclResult_t precclMemAlloc(void** ptr, size_t size);
precclResult_t precclMemFree(void* ptr);
precclResult_t precclCommRegister(const precclComm_t comm, void* buff, size_t size, void** handle);
precclResult_t precclCommDeregister(const precclComm_t comm, void* handle);
precclResult_t precclCommWindowRegister(precclComm_t comm, void* buff, size_t size, precclWindow_t* win,
                                        int winFlags);
precclResult_t precclCommWindowDeregister(precclComm_t comm, precclWindow_t win);

/* ---- reduction ops ---- */
precclResult_t precclRedOpCreatePreMulSum(precclRedOp_t* op, void* scalar, precclDataType_t datatype,
                                          precclScalarResidence_t residence, precclComm_t comm);
precclResult_t precclRedOpDestroy(precclRedOp_t op, precclComm_t comm);

/* ---- streams (host execution queues on the CPU build) ----
 * A collective given a stream is enqueued and the call returns; a NULL stream means the call is
 * complete when it returns. Calls on one stream run in order. */
precclResult_t precclStreamCreate(precclStream_t* stream);
precclResult_t precclStreamSynchronize(precclStream_t stream);
/* precclSuccess when all enqueued work finished, precclInProgress while some is pending, or the
 * first error an enqueued call returned. */
precclResult_t precclStreamQuery(precclStream_t stream);
precclResult_t precclStreamDestroy(precclStream_t stream);

/* ---- collectives ---- */
precclResult_t precclAllReduce(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                               precclRedOp_t op, precclComm_t comm, precclStream_t stream);
precclResult_t precclBroadcast(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                               int root, precclComm_t comm, precclStream_t stream);
precclResult_t precclReduce(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                            precclRedOp_t op, int root, precclComm_t comm, precclStream_t stream);
/* sendcount elements per rank; recvbuff holds nranks * sendcount. */
precclResult_t precclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                               precclDataType_t datatype, precclComm_t comm, precclStream_t stream);
/* sendbuff holds nranks * recvcount; rank r receives block r reduced. */
precclResult_t precclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                   precclDataType_t datatype, precclRedOp_t op, precclComm_t comm,
                                   precclStream_t stream);
/* count elements to and from each rank; buffers hold nranks * count. */
precclResult_t precclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                              precclComm_t comm, precclStream_t stream);
/* Root receives nranks * count (block r from rank r). */
precclResult_t precclGather(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                            int root, precclComm_t comm, precclStream_t stream);
/* Root sends block r of nranks * count to rank r. */
precclResult_t precclScatter(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                             int root, precclComm_t comm, precclStream_t stream);
precclResult_t precclSend(const void* sendbuff, size_t count, precclDataType_t datatype, int peer,
                          precclComm_t comm, precclStream_t stream);
precclResult_t precclRecv(void* recvbuff, size_t count, precclDataType_t datatype, int peer, precclComm_t comm,
                          precclStream_t stream);

/* Calls between GroupStart and GroupEnd are issued together at GroupEnd: point-to-point calls in any
 * order do not deadlock. Groups nest; the outermost GroupEnd issues. */
precclResult_t precclGroupStart(void);
precclResult_t precclGroupEnd(void);
/* Ends the group like GroupEnd but runs nothing: the calls are dropped and simInfo->estimatedTime gets the
 * models' estimate of the slowest communicator's work. */
precclResult_t precclGroupSimulateEnd(precclSimInfo_t* simInfo);

/* ---- visibility ---- */
typedef struct {
  int vt;                    /* VT index */
  int nic;                   /* NIC (rail) index its inter-host edges use, -1 if none */
  uint64_t bytes;            /* bytes this rank sent on the VT, all epochs */
  uint64_t stalls;           /* times the VT's sender found its FIFO full, all epochs */
  uint64_t stallNs;          /* time spent waiting for a free slot, all epochs */
  uint64_t lastBytes;        /* the same three for the last completed epoch */
  uint64_t lastStalls;
  uint64_t lastStallNs;
  double share;              /* fraction of the last collective's bytes the allocation gave this VT */
  uint64_t estimateNs;       /* the model's completion-time estimate for lastBytes (0: no model yet) */
  int state;                 /* precclVtLive; precclVtMasked: a dead path took it out; precclVtProbing: it is
                                live again but held at the policy's floor share until its own telemetry is
                                in (docs/failures.md) */
  uint64_t stateEpoch;       /* the epoch (collective) from which it is masked or live again; 0 for live from
                                the start */
  uint64_t relayedBytes;     /* of `bytes`, those this rank forwarded for another rank of its host through
                                its NIC (PRECCL_NIC_AFFINITY=rail), all epochs */
  uint64_t lastRelayedBytes; /* the same for the last completed epoch */
} precclVtStats_t;
enum { precclVtLive = 0, precclVtMasked = 1, precclVtProbing = 2 };
/* Fills up to *n entries; sets *n to the number of VTs. */
precclResult_t precclCommGetVtStats(precclComm_t comm, precclVtStats_t* stats, int* n);
/* Number of completed collectives (the epoch counter). */
precclResult_t precclCommGetEpoch(precclComm_t comm, uint64_t* epoch);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* PRECCL_PRECCL_H_ */
