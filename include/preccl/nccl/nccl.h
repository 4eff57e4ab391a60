/*
 * NCCL's C API as PReCCL's libnccl.so.2 implements it (NCCL 2.28): the types, values and declarations a
 * program written for NCCL needs, for builds without the CUDA toolkit. Compile with
 * -I<prefix>/include/preccl/nccl and link with -lnccl from PReCCL's lib/preccl-nccl (docs/nccl.md).
 * The layout of every type is NCCL's (tests/shim checks it against NVIDIA's own header).
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA's stream handle, as cuda_runtime.h declares it. PReCCL's CPU build completes every call before it
 * returns, whatever the stream: work later on any stream is ordered after it. */
#ifndef __DRIVER_TYPES_H__
typedef struct CUstream_st* cudaStream_t;
#endif

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00

/* Read by its size field: a caller built against a later NCCL (more fields at the end) or an earlier one
 * (fewer) is understood. PReCCL uses blocking, commName and splitShare; it accepts and ignores the others
 * (they tune CUDA kernels and NVLink features this build does not have). */
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_MAGIC 0xcafebeef
#define NCCL_CONFIG_INITIALIZER                                                                        \
  {                                                                                                    \
    sizeof(ncclConfig_t), NCCL_CONFIG_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),           \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,      \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,      \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                                    \
  }

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* microseconds (PReCCL: from its per-VT models; NCCL_UNDEF_FLOAT when unknown) */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_MAGIC 0x74685283
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* the first value RedOpCreatePreMulSum hands out */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0, ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2, ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6, ncclHalf = 6,
  ncclFloat32 = 7, ncclFloat = 7,
  ncclFloat64 = 8, ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Every function also exists as pnccl<Name> (NCCL's profiling names); nccl<Name> is a weak alias of it. */
#define NCCL_DECLARE_(ret, name, args) ret nccl##name args; ret pnccl##name args

NCCL_DECLARE_(ncclResult_t, MemAlloc, (void** ptr, size_t size));
NCCL_DECLARE_(ncclResult_t, MemFree, (void* ptr));
NCCL_DECLARE_(ncclResult_t, GetVersion, (int* version));
NCCL_DECLARE_(ncclResult_t, GetUniqueId, (ncclUniqueId* uniqueId));
NCCL_DECLARE_(ncclResult_t, CommInitRankConfig,
              (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config));
NCCL_DECLARE_(ncclResult_t, CommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank));
NCCL_DECLARE_(ncclResult_t, CommInitAll, (ncclComm_t* comm, int ndev, const int* devlist));
NCCL_DECLARE_(ncclResult_t, CommFinalize, (ncclComm_t comm));
NCCL_DECLARE_(ncclResult_t, CommDestroy, (ncclComm_t comm));
NCCL_DECLARE_(ncclResult_t, CommAbort, (ncclComm_t comm));
NCCL_DECLARE_(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags));
NCCL_DECLARE_(ncclResult_t, CommSplit,
              (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));
NCCL_DECLARE_(ncclResult_t, CommShrink,
              (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
               ncclConfig_t* config, int shrinkFlags));
NCCL_DECLARE_(ncclResult_t, CommInitRankScalable,
              (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config));
NCCL_DECLARE_(const char*, GetErrorString, (ncclResult_t result));
NCCL_DECLARE_(const char*, GetLastError, (ncclComm_t comm));
NCCL_DECLARE_(void, ResetDebugInit, (void));
NCCL_DECLARE_(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));
NCCL_DECLARE_(ncclResult_t, CommCount, (const ncclComm_t comm, int* count));
/* No CUDA device in the CPU build: ncclInvalidUsage. */
NCCL_DECLARE_(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int* device));
NCCL_DECLARE_(ncclResult_t, CommUserRank, (const ncclComm_t comm, int* rank));
NCCL_DECLARE_(ncclResult_t, CommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle));
NCCL_DECLARE_(ncclResult_t, CommDeregister, (const ncclComm_t comm, void* handle));
NCCL_DECLARE_(ncclResult_t, CommWindowRegister,
              (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
NCCL_DECLARE_(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));
NCCL_DECLARE_(ncclResult_t, RedOpCreatePreMulSum,
              (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
               ncclComm_t comm));
NCCL_DECLARE_(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));
NCCL_DECLARE_(ncclResult_t, Reduce,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
               int root, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Bcast,
              (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Broadcast,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, AllReduce,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
               ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, ReduceScatter,
              (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
               ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, AllGather,
              (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
               cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, AlltoAll,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
               cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Gather,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Scatter,
              (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
               ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Send,
              (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
               cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, Recv,
              (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream));
NCCL_DECLARE_(ncclResult_t, GroupStart, (void));
NCCL_DECLARE_(ncclResult_t, GroupEnd, (void));
NCCL_DECLARE_(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t* simInfo));

#undef NCCL_DECLARE_

#ifdef __cplusplus
}
#endif
#endif /* NCCL_H_ */
