// Our enum values and unique-id size equal NVIDIA NCCL's (the libnccl.so.2 shim relies on it).
// Compiled against nccl.h only when CMake found it (PRECCL_HAVE_NCCL_H); otherwise the test skips.
#include <catch2/catch.hpp>

#include "preccl/preccl.h"

#ifdef PRECCL_HAVE_NCCL_H
#include <nccl.h>

// Compile time: any drift fails the build.
static_assert(PRECCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES);
static_assert(sizeof(precclUniqueId) == sizeof(ncclUniqueId));
static_assert(PRECCL_SPLIT_NOCOLOR == NCCL_SPLIT_NOCOLOR);
static_assert(PRECCL_CONFIG_UNDEF_INT == NCCL_CONFIG_UNDEF_INT);
static_assert(int(precclNumResults) == int(ncclNumResults));
static_assert(int(precclNumOps) == int(ncclNumOps));
static_assert(int(precclMaxRedOp) == int(ncclMaxRedOp));
static_assert(int(precclNumTypes) == int(ncclNumTypes));
static_assert(sizeof(precclRedOp_t) == sizeof(ncclRedOp_t));
static_assert(sizeof(precclDataType_t) == sizeof(ncclDataType_t));
static_assert(sizeof(precclResult_t) == sizeof(ncclResult_t));

TEST_CASE("enum values equal NVIDIA nccl.h", "[nccl]") {
  // Run time as well, so the report names each value.
  CHECK(int(precclSuccess) == int(ncclSuccess));
  CHECK(int(precclUnhandledCudaError) == int(ncclUnhandledCudaError));
  CHECK(int(precclSystemError) == int(ncclSystemError));
  CHECK(int(precclInternalError) == int(ncclInternalError));
  CHECK(int(precclInvalidArgument) == int(ncclInvalidArgument));
  CHECK(int(precclInvalidUsage) == int(ncclInvalidUsage));
  CHECK(int(precclRemoteError) == int(ncclRemoteError));
  CHECK(int(precclInProgress) == int(ncclInProgress));
  CHECK(int(precclNumResults) == int(ncclNumResults));

  CHECK(int(precclSum) == int(ncclSum));
  CHECK(int(precclProd) == int(ncclProd));
  CHECK(int(precclMax) == int(ncclMax));
  CHECK(int(precclMin) == int(ncclMin));
  CHECK(int(precclAvg) == int(ncclAvg));
  CHECK(int(precclNumOps) == int(ncclNumOps));
  CHECK(int(precclMaxRedOp) == int(ncclMaxRedOp));

  CHECK(int(precclInt8) == int(ncclInt8));
  CHECK(int(precclChar) == int(ncclChar));
  CHECK(int(precclUint8) == int(ncclUint8));
  CHECK(int(precclInt32) == int(ncclInt32));
  CHECK(int(precclInt) == int(ncclInt));
  CHECK(int(precclUint32) == int(ncclUint32));
  CHECK(int(precclInt64) == int(ncclInt64));
  CHECK(int(precclUint64) == int(ncclUint64));
  CHECK(int(precclFloat16) == int(ncclFloat16));
  CHECK(int(precclHalf) == int(ncclHalf));
  CHECK(int(precclFloat32) == int(ncclFloat32));
  CHECK(int(precclFloat) == int(ncclFloat));
  CHECK(int(precclFloat64) == int(ncclFloat64));
  CHECK(int(precclDouble) == int(ncclDouble));
  CHECK(int(precclBfloat16) == int(ncclBfloat16));
  CHECK(int(precclFloat8e4m3) == int(ncclFloat8e4m3));
  CHECK(int(precclFloat8e5m2) == int(ncclFloat8e5m2));
  CHECK(int(precclNumTypes) == int(ncclNumTypes));

  CHECK(int(precclScalarDevice) == int(ncclScalarDevice));
  CHECK(int(precclScalarHostImmediate) == int(ncclScalarHostImmediate));
  CHECK(PRECCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES);
  CHECK(PRECCL_SPLIT_NOCOLOR == NCCL_SPLIT_NOCOLOR);
  CHECK(PRECCL_CONFIG_UNDEF_INT == NCCL_CONFIG_UNDEF_INT);
}

#else

TEST_CASE("enum values equal NVIDIA nccl.h", "[nccl]") {
  WARN("skipped: NVIDIA nccl.h not installed");
  SUCCEED();
}

#endif
